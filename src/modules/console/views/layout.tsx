import type { ComponentChildren } from "preact";
import { renderToString } from "preact-render-to-string";
import { type ConsoleSession, can } from "../../users/index.js";
import { ASSET_VERSION } from "../assets.js";
import type { ConsoleLink } from "../console-link.js";
import { Field } from "./components.js";

/** What every page knows: who is signed in, the form token, and where it is. */
export interface PageContext {
  session: ConsoleSession | undefined;
  csrf: string;
  path: string;
  /** The links to the features' console pages (see console.seam.ts). */
  links: readonly ConsoleLink[];
  /** A form post this page answers that was refused: its problems, shown beside its fields. */
  problem?: FormProblem;
}

/** A refused form post: which form, what went wrong (by field, where known), what was typed. */
export interface FormProblem {
  form: string;
  message: string;
  fields: Record<string, string>;
  values: Record<string, string>;
}

/** The value a field of a refused form keeps, else its default. */
export function kept(page: PageContext, form: string, field: string, fallback = ""): string {
  return page.problem?.form === form ? (page.problem.values[field] ?? fallback) : fallback;
}

/** The problem of one field of a refused form, beside the field (referenced by aria-describedby). */
export function FieldError({ page, form, field }: { page: PageContext; form: string; field: string }) {
  const message = page.problem?.form === form ? page.problem.fields[field] : undefined;
  return message ? (
    <span class="field-error" id={`${form}-${field}-error`} role="alert">
      {message}
    </span>
  ) : null;
}

/** A field of a form that may be refused: its label (and hint), the control, then the field's problem. */
export function FormField({
  page,
  form,
  field,
  label,
  hint,
  children,
}: {
  page: PageContext;
  form: string;
  field: string;
  label: string;
  hint?: string;
  children: ComponentChildren;
}) {
  return (
    <Field label={label} hint={hint}>
      {children}
      <FieldError page={page} form={form} field={field} />
    </Field>
  );
}

/** What a refused form could not place beside a field, at the top of the form. */
export function FormError({ page, form }: { page: PageContext; form: string }) {
  const problem = page.problem?.form === form ? page.problem : undefined;
  if (!problem || Object.keys(problem.fields).length > 0) return null;
  return (
    <p class="field-error" role="alert">
      {problem.message}
    </p>
  );
}

/** A page's heading: its title and, below it, what the page shows. */
export function PageHead({ title, children }: { title: string; children: ComponentChildren }) {
  return (
    <div class="page-head">
      <div>
        <h1>{title}</h1>
        {children}
      </div>
    </div>
  );
}

/** The CSRF token every form carries (checked by @fastify/csrf-protection). */
export function Csrf({ page }: { page: PageContext }) {
  return <input type="hidden" name="_csrf" value={page.csrf} />;
}

function NavLink({ page, href, children }: { page: PageContext; href: string; children: ComponentChildren }) {
  const current = page.path === href || page.path.startsWith(`${href}/`);
  return (
    <a href={href} aria-current={current ? "page" : undefined}>
      {children}
    </a>
  );
}

export function Layout({
  page,
  title,
  children,
}: {
  page: PageContext;
  title: string;
  children: ComponentChildren;
}) {
  const session = page.session;
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="csrf-token" content={page.csrf} />
        <title>{`${title} · Case console`}</title>
        <link rel="icon" type="image/svg+xml" href={`/console/assets/favicon.svg?v=${ASSET_VERSION}`} />
        <link rel="stylesheet" href={`/console/assets/console.css?v=${ASSET_VERSION}`} />
        <script src={`/console/assets/console.js?v=${ASSET_VERSION}`} defer />
      </head>
      <body>
        <a class="skip" href="#main">
          Skip to content
        </a>
        <header class="topbar">
          <div class="topbar-inner">
            <a class="product" href="/console/queue">
              Case console{session ? <small>{session.tenantName}</small> : null}
            </a>
            {session ? (
              <nav class="nav" aria-label="Main">
                <NavLink page={page} href="/console/queue">
                  Review queue
                </NavLink>
                <NavLink page={page} href="/console/cases">
                  All cases
                </NavLink>
                <NavLink page={page} href="/console/mine">
                  Mine
                </NavLink>
                <NavLink page={page} href="/console/audit">
                  Audit log
                </NavLink>
                {page.links
                  .filter((l) => l.place === "main" && can(session.role, l.permission))
                  .map((l) => (
                    <NavLink page={page} href={l.href}>
                      {l.title}
                    </NavLink>
                  ))}
                {can(session.role, "users:manage") ? (
                  <NavLink page={page} href="/console/settings">
                    Settings
                  </NavLink>
                ) : null}
              </nav>
            ) : null}
            {session ? (
              <div class="who">
                <span>
                  {session.name} <span class="badge badge-grey">{session.role}</span>
                </span>
                <form method="post" action="/console/sign-out">
                  <Csrf page={page} />
                  <button type="submit">Sign out</button>
                </form>
              </div>
            ) : null}
          </div>
        </header>
        <main id="main" tabIndex={-1}>
          {children}
        </main>
      </body>
    </html>
  );
}

export function renderPage(node: preact.VNode): string {
  return `<!doctype html>${renderToString(node)}`;
}

export function Notice({ kind, children }: { kind: "ok" | "error" | "info"; children: ComponentChildren }) {
  return (
    <div class={`notice notice-${kind}`} role={kind === "error" ? "alert" : "status"}>
      {children}
    </div>
  );
}

/** A page of its own for an error: what went wrong and the way back. */
export function ErrorPage({
  page,
  status,
  message,
  back,
}: {
  page: PageContext;
  status: number;
  message: string;
  back: string;
}) {
  const title =
    status === 403
      ? "Not allowed"
      : status === 404
        ? "Not found"
        : status === 409
          ? "Not possible now"
          : status === 429
            ? "Too many attempts"
            : status >= 500
              ? "Something went wrong"
              : "That did not work";
  return (
    <Layout page={page} title={title}>
      <div class="panel">
        <h1>{title}</h1>
        <Notice kind="error">{message}</Notice>
        <a class="button" href={back}>
          Go back
        </a>
      </div>
    </Layout>
  );
}
