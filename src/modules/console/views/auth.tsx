import { MIN_PASSWORD_LENGTH } from "../../users/index.js";
import { Field, SubmitButton } from "./components.js";
import { Csrf, Layout, Notice, type PageContext } from "./layout.js";

export function SignInPage({
  page,
  next,
  email,
  error,
  notice,
}: {
  page: PageContext;
  next: string;
  email?: string;
  error?: string;
  notice?: string;
}) {
  return (
    <Layout page={page} title="Sign in">
      <div class="auth">
        <div class="panel">
          <h1>Sign in to the case console</h1>
          {notice ? <Notice kind="ok">{notice}</Notice> : null}
          {error ? <Notice kind="error">{error}</Notice> : null}
          <form method="post" action="/console/sign-in" class="stack">
            <Csrf page={page} />
            <input type="hidden" name="next" value={next} />
            <Field label="Email">
              <input
                type="email"
                name="email"
                autocomplete="username"
                required
                value={email ?? ""}
                autofocus
              />
            </Field>
            <Field label="Password">
              <input type="password" name="password" autocomplete="current-password" required />
            </Field>
            <SubmitButton>Sign in</SubmitButton>
          </form>
          <p class="small muted">
            No password yet? Use the setup link your administrator sent you. Forgotten it? Ask an
            administrator for a new setup link.
          </p>
        </div>
      </div>
    </Layout>
  );
}

export function SetupPage({
  page,
  token,
  name,
  email,
  error,
}: {
  page: PageContext;
  token: string;
  name: string;
  email: string;
  error?: string;
}) {
  return (
    <Layout page={page} title="Set your password">
      <div class="auth">
        <div class="panel">
          <h1>Set your password</h1>
          <p>
            Welcome, {name}. You will sign in as <strong>{email}</strong>.
          </p>
          {error ? <Notice kind="error">{error}</Notice> : null}
          <form method="post" action="/console/setup" class="stack">
            <Csrf page={page} />
            <input type="hidden" name="token" value={token} />
            <input type="text" name="username" value={email} autocomplete="username" hidden readOnly />
            <Field label="New password" hint={`at least ${MIN_PASSWORD_LENGTH} characters`}>
              <input
                type="password"
                name="password"
                autocomplete="new-password"
                minLength={MIN_PASSWORD_LENGTH}
                required
                autofocus
              />
            </Field>
            <Field label="Repeat the password">
              <input type="password" name="confirm" autocomplete="new-password" required />
            </Field>
            <SubmitButton>Set password</SubmitButton>
          </form>
        </div>
      </div>
    </Layout>
  );
}

export function LinkGonePage({ page, message }: { page: PageContext; message: string }) {
  return (
    <Layout page={page} title="Setup link not valid">
      <div class="auth">
        <div class="panel">
          <h1>This link cannot be used</h1>
          <Notice kind="error">{message}</Notice>
          <p>Ask an administrator of your team for a new setup link.</p>
          <a class="button" href="/console/sign-in">
            Go to sign-in
          </a>
        </div>
      </div>
    </Layout>
  );
}
