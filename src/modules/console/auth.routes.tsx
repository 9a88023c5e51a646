import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { AppError } from "../../platform/errors.js";
import { completeSetup, setupFor, signIn, signOut } from "../users/index.js";
import { ASSETS } from "./assets.js";
import {
  pageOf,
  SESSION_COOKIE,
  safeNext,
  seeOther,
  sendPage,
  sessionCookieOptions,
} from "./console.plugin.js";
import { formOf } from "./form.js";
import { LinkGonePage, SetupPage, SignInPage } from "./views/auth.js";

const open = { console: { public: true } };

/** Signing in and out, the one-time setup link, and the console's static assets. */
export function authRoutes(scope: App, ctx: AppContext): void {
  scope.get("/", { config: open }, async (request, reply) =>
    seeOther(reply, request.consoleSession ? "/console/queue" : "/console/sign-in"),
  );

  scope.get<{ Params: { name: string } }>(
    "/assets/:name",
    { config: { console: { public: true, static: true } } },
    async (request, reply) => {
      // Own names only: `__proto__` or `constructor` must not reach the object's prototype.
      const name = request.params.name;
      const asset = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
      if (!asset) throw new AppError("not_found", "no such asset");
      return reply
        .type(asset.type)
        .header("cache-control", "public, max-age=31536000, immutable")
        .send(asset.body);
    },
  );

  scope.get<{ Querystring: { next?: string } }>("/sign-in", { config: open }, async (request, reply) => {
    const next = safeNext(request.query.next);
    if (request.consoleSession) return seeOther(reply, next);
    const notice =
      (request.query as { done?: string }).done === "password" ? "Your password is set: sign in." : undefined;
    return sendPage(reply, <SignInPage page={pageOf(request, reply)} next={next} notice={notice} />);
  });

  scope.post("/sign-in", { config: open }, async (request, reply) => {
    const form = formOf(request);
    const email = form.text("email");
    const next = safeNext(form.text("next"));
    try {
      const { token } = await signIn(ctx, email, form.raw("password"), request.ip);
      reply.setCookie(SESSION_COOKIE, token, sessionCookieOptions(ctx));
      return seeOther(reply, next);
    } catch (err) {
      if (!(err instanceof AppError) || (err.status !== 401 && err.status !== 429)) throw err;
      if (err.headers) reply.headers(err.headers);
      return sendPage(
        reply,
        <SignInPage page={pageOf(request, reply)} next={next} email={email} error={err.message} />,
        err.status,
      );
    }
  });

  scope.post("/sign-out", { config: open }, async (request, reply) => {
    await signOut(ctx, request.cookies[SESSION_COOKIE]);
    reply.clearCookie(SESSION_COOKIE, { path: "/console" });
    return seeOther(reply, "/console/sign-in");
  });

  scope.get<{ Querystring: { token?: string } }>("/setup", { config: open }, async (request, reply) => {
    const token = request.query.token ?? "";
    try {
      const user = await setupFor(ctx, token);
      return sendPage(
        reply,
        <SetupPage page={pageOf(request, reply)} token={token} name={user.name} email={user.email} />,
      );
    } catch (err) {
      if (!(err instanceof AppError) || err.status !== 410) throw err;
      return sendPage(reply, <LinkGonePage page={pageOf(request, reply)} message={err.message} />, 410);
    }
  });

  scope.post("/setup", { config: open }, async (request, reply) => {
    const form = formOf(request);
    const token = form.text("token");
    const password = form.raw("password");
    let user: Awaited<ReturnType<typeof setupFor>>;
    try {
      user = await setupFor(ctx, token);
    } catch (err) {
      if (!(err instanceof AppError) || err.status !== 410) throw err;
      return sendPage(reply, <LinkGonePage page={pageOf(request, reply)} message={err.message} />, 410);
    }
    const again = (error: string) =>
      sendPage(
        reply,
        <SetupPage
          page={pageOf(request, reply)}
          token={token}
          name={user.name}
          email={user.email}
          error={error}
        />,
        400,
      );
    if (password !== form.raw("confirm")) return again("The two passwords differ.");
    try {
      await completeSetup(ctx, token, password);
    } catch (err) {
      if (err instanceof AppError && err.status === 400) return again(err.message);
      throw err;
    }
    return seeOther(reply, "/console/sign-in?done=password");
  });
}
