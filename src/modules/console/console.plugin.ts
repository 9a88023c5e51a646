import fastifyCookie from "@fastify/cookie";
import fastifyCsrf from "@fastify/csrf-protection";
import fastifyFormbody from "@fastify/formbody";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import type { VNode } from "preact";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { AppError, codeForStatus } from "../../platform/errors.js";
import { type ConsoleSession, can, type Permission, SESSION_HOURS, sessionFor } from "../users/index.js";
import type { ConsoleLink } from "./console-link.js";
import { ErrorPage, type FormProblem, type PageContext, renderPage } from "./views/layout.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /** A console route: the permission it needs, or `public` (sign-in, setup, assets). */
    console?: ConsoleRouteConfig;
  }
  interface FastifyRequest {
    consoleSession?: ConsoleSession;
  }
  interface FastifyInstance {
    /** The links to the features' console pages (inside the console's scope only). */
    consoleLinks?: readonly ConsoleLink[];
  }
}

export interface ConsoleRouteConfig {
  permission?: Permission;
  public?: boolean;
  /** Answers JSON (the upload slot the page's script asks for) instead of pages. */
  json?: boolean;
  /** The stylesheet and script: public, and no session is read for them. */
  static?: boolean;
}

export const SESSION_COOKIE = "cds_console";
const CSRF_COOKIE = "cds_console_csrf";

/** The signed-in user of a route that requires one (every route that is not `public`). */
export function sessionOf(request: FastifyRequest): ConsoleSession {
  if (!request.consoleSession) throw new Error("sessionOf() called on a public console route");
  return request.consoleSession;
}

export function pageOf(request: FastifyRequest, reply: FastifyReply): PageContext {
  return {
    session: request.consoleSession,
    csrf: reply.generateCsrf(),
    path: request.url.split("?")[0] ?? "/console",
    links: request.server.consoleLinks ?? [],
  };
}

/**
 * A form post refused for its input (400, 422): the problems by field, for the page to show beside
 * each field with what was typed. Anything else is thrown on to the error page.
 */
export function problemOf(
  error: unknown,
  form: string,
  values: Record<string, string>,
  fieldOf: (path: string) => string | undefined = (path) => path,
): FormProblem {
  if (!(error instanceof AppError) || (error.status !== 400 && error.status !== 422)) throw error;
  const fields: Record<string, string> = {};
  for (const d of error.details ?? []) {
    const field = fieldOf(d.path);
    if (field && !fields[field]) fields[field] = d.message;
  }
  return { form, message: error.message, fields, values };
}

export function sendPage(reply: FastifyReply, node: VNode, status = 200): FastifyReply {
  return reply.status(status).type("text/html; charset=utf-8").send(renderPage(node));
}

/** After a form post: 303 sends the browser to a page it loads with GET. */
export function seeOther(reply: FastifyReply, location: string): FastifyReply {
  return reply.redirect(location, 303);
}

/** Only console paths are followed after sign-in: never another site. */
export function safeNext(next: unknown): string {
  return typeof next === "string" && /^\/console\/[^/\\]/.test(next) && !next.includes("//")
    ? next
    : "/console/queue";
}

export function sessionCookieOptions(ctx: AppContext) {
  return {
    path: "/console",
    httpOnly: true,
    sameSite: "lax" as const,
    secure: ctx.config.env === "production",
    maxAge: SESSION_HOURS * 3600,
  };
}

function securityHeaders(ctx: AppContext, reply: FastifyReply): void {
  const uploads = ctx.blobs.uploadOrigin;
  reply.headers({
    "content-security-policy": [
      "default-src 'self'",
      "script-src 'self'",
      "style-src 'self'",
      "img-src 'self' data:",
      "frame-src 'self'",
      `connect-src 'self' ${uploads}`,
      "form-action 'self'",
      "frame-ancestors 'none'",
      "base-uri 'none'",
      "object-src 'none'",
    ].join("; "),
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
    "cache-control": "no-store",
  });
}

function firstValues(query: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof query !== "object" || query === null) return out;
  for (const [name, value] of Object.entries(query)) {
    const first: unknown = Array.isArray(value) ? value[0] : value;
    if (typeof first === "string") out[name] = first;
  }
  return out;
}

/** Where "Go back" leads from an error: the case the request was about, else the queue. */
function backFrom(request: FastifyRequest): string {
  const match = /^\/console\/(cases\/[0-9a-f-]{36}|settings\/[a-z-]+)/.exec(request.url);
  return match ? `/console/${match[1]}` : "/console/queue";
}

function statusOf(error: FastifyError | AppError): { status: number; message: string } {
  if (error instanceof AppError) return { status: error.status, message: error.message };
  if (error.code === "FST_CSRF_INVALID_TOKEN" || error.code === "FST_CSRF_MISSING_SECRET") {
    return {
      status: 403,
      message: "This form was not sent from a current console page. Reload the page and try again.",
    };
  }
  if (error.validation) return { status: 400, message: `The form is not complete: ${error.message}` };
  const status = error.statusCode ?? 500;
  return { status, message: status >= 500 ? "The service could not complete this request." : error.message };
}

/**
 * The console's own scope under /console: cookies, form bodies, CSRF checks on every POST, the
 * session read from the database on every request, HTML error pages, and security headers. No
 * route in it appears in the OpenAPI document.
 */
export async function consoleScope(app: App, ctx: AppContext, routes: (scope: App) => void): Promise<void> {
  await app.register(
    (scope, _options, done) => {
      scope.addHook("onRoute", (route) => {
        route.schema = { ...route.schema, hide: true };
      });
      // Registered in order without waiting: each loads before the routes below are served.
      void scope.register(fastifyCookie);
      void scope.register(fastifyFormbody, { bodyLimit: 256 * 1024 });
      void scope.register(fastifyCsrf, {
        sessionPlugin: "@fastify/cookie",
        cookieKey: CSRF_COOKIE,
        cookieOpts: {
          path: "/console",
          httpOnly: true,
          sameSite: "lax",
          secure: ctx.config.env === "production",
        },
      });
      scope.decorateRequest("consoleSession", undefined);
      scope.decorate("consoleLinks", ctx.console.links);

      scope.addHook("onRequest", async (request, reply) => {
        securityHeaders(ctx, reply);
        // The console's pages read one value per query parameter: a repeated one (`?token=a&token=b`)
        // keeps its first, so no route meets an array where it reads a string.
        request.query = firstValues(request.query);
        const config = request.routeOptions.config?.console;
        if (config?.static) return;
        request.consoleSession = await sessionFor(ctx, request.cookies[SESSION_COOKIE]);
        if (!config || config.public) return;
        const session = request.consoleSession;
        if (!session) {
          if (config.json) throw new AppError("unauthenticated", "your session has ended: sign in again");
          const next = request.method === "GET" ? `?next=${encodeURIComponent(request.url)}` : "";
          return reply.redirect(`/console/sign-in${next}`, 303);
        }
        if (config.permission && !can(session.role, config.permission)) {
          throw new AppError(
            "forbidden",
            `Your role (${session.role}) does not include the ${config.permission} permission.`,
          );
        }
      });

      // The time the page took in the service (from the request's arrival to its answer), as
      // browsers' developer tools and `npm run bench -- console` read it.
      scope.addHook("onSend", async (_request, reply, payload) => {
        reply.header("server-timing", `app;dur=${reply.elapsedTime.toFixed(1)}`);
        return payload;
      });

      scope.addHook("preHandler", (request, reply, done) => {
        if (request.method === "GET" || request.method === "HEAD") {
          done();
          return;
        }
        scope.csrfProtection(request, reply, done);
      });

      scope.setErrorHandler((error: FastifyError | AppError, request, reply) => {
        const { status, message } = statusOf(error);
        if (status >= 500) request.log.error({ err: error }, "console request failed");
        if (error instanceof AppError && error.headers) reply.headers(error.headers);
        if (request.routeOptions.config?.console?.json) {
          // The app's error schema (every JSON error carries its code) serialises this answer too.
          const code = error instanceof AppError ? error.code : codeForStatus(status);
          return reply.status(status).send({ error: message, code });
        }
        return sendPage(
          reply,
          ErrorPage({ page: pageOf(request, reply), status, message, back: backFrom(request) }),
          status,
        );
      });

      scope.setNotFoundHandler((request, reply) =>
        sendPage(
          reply,
          ErrorPage({
            page: pageOf(request, reply),
            status: 404,
            message: "There is no console page at this address.",
            back: "/console/queue",
          }),
          404,
        ),
      );

      routes(scope);
      done();
    },
    { prefix: "/console" },
  );
}
