import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import Fastify, { type FastifyBaseLogger, LogController } from "fastify";
import { sql } from "kysely";
import { installAuth } from "./modules/auth/auth.plugin.js";
import { featureModules } from "./modules/index.js";
import type { App } from "./platform/app-types.js";
import type { AppContext } from "./platform/context.js";
import { uuid } from "./platform/crypto.js";
import { AppError } from "./platform/errors.js";
import {
  installBodyRules,
  installErrorHandling,
  installJsonParser,
  installValidators,
  requestIdFrom,
} from "./platform/http.js";
import { clientErrors, installInputGuard, routerErrors } from "./platform/input-guard.js";

export const BODY_LIMIT = 1024 * 1024;

/**
 * Builds the whole HTTP application for a context. It never listens: `main.ts` does that, and
 * tests call `app.inject` or listen on a port of their own.
 */
export async function buildApp(ctx: AppContext): Promise<App> {
  const app = Fastify({
    loggerInstance: ctx.log as FastifyBaseLogger,
    bodyLimit: BODY_LIMIT,
    genReqId: (req) => requestIdFrom(req.headers["x-request-id"], uuid),
    // Request lines are debug-level detail; errors are logged by the error handler at any level.
    logController: new LogController({
      disableRequestLogging: ctx.config.logLevel !== "debug" && ctx.config.logLevel !== "trace",
    }),
    trustProxy: false,
    routerOptions: { ignoreTrailingSlash: true },
    frameworkErrors: routerErrors,
    clientErrorHandler: clientErrors,
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.addHook("onRequest", async (request, reply) => {
    reply.header("x-request-id", request.id);
  });
  installValidators(app);
  installJsonParser(app);
  installErrorHandling(app);
  installBodyRules(app);
  installInputGuard(app);
  installAuth(app, ctx);
  app.addHook("onRoute", (route) => {
    const config = route.config as { scope?: string; admin?: boolean } | undefined;
    if (!config?.scope && !config?.admin) return;
    route.schema = {
      ...route.schema,
      security: config.admin ? [{ adminToken: [] }] : [{ apiKey: [] }],
      ...(config.scope
        ? {
            description: [route.schema?.description, `Scope: \`${config.scope}\`.`]
              .filter(Boolean)
              .join("\n\n"),
          }
        : {}),
    };
  });

  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Case Decisioning Service",
        version: "1.0.0",
        description:
          "Partner interface (cases, paused nodes, callbacks, tags, information requests, customer " +
          "attributes) and the operator API (`/admin`).",
      },
      components: {
        securitySchemes: {
          apiKey: { type: "apiKey", in: "header", name: "X-API-Key" },
          adminToken: { type: "http", scheme: "bearer" },
        },
      },
    },
  });
  await app.register(swaggerUi, {
    routePrefix: "/docs",
    uiConfig: { validatorUrl: null, deepLinking: true },
  });

  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());

  app.get("/health", { schema: { tags: ["service"], summary: "The process is up" } }, async () => ({
    status: "ok",
  }));

  app.get(
    "/ready",
    { schema: { tags: ["service"], summary: "The database is reachable" } },
    async (request) => {
      try {
        await sql`SELECT 1`.execute(ctx.db.root);
      } catch (err) {
        request.log.warn({ err }, "readiness check failed");
        throw new AppError("unavailable", "database unreachable");
      }
      return { status: "ready" };
    },
  );

  for (const module of featureModules) await module.routes?.(app, ctx);
  return app;
}
