import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import Fastify, { type FastifyBaseLogger, LogController } from "fastify";
import { featureModules } from "./modules/index.js";
import type { App } from "./platform/app-types.js";
import type { AppContext } from "./platform/context.js";
import { uuid } from "./platform/crypto.js";
import {
  installBodyRules,
  installErrorHandling,
  installJsonParser,
  installValidators,
  requestIdFrom,
} from "./platform/http.js";
import { clientErrors, installInputGuard, routerErrors } from "./platform/input-guard.js";
import { installOpenApi } from "./platform/openapi.js";
import { operationsRoutes } from "./platform/operations.routes.js";

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
  for (const module of featureModules) module.install?.(app, ctx);
  const webhooks = Object.assign({}, ...featureModules.map((m) => m.openapi?.webhooks?.() ?? {}));
  await installOpenApi(app, ctx, { webhooks });

  await operationsRoutes(app, ctx);

  for (const module of featureModules) await module.routes?.(app, ctx);
  return app;
}

/**
 * A worker-only process's HTTP surface (`CDS_METRICS_PORT`): `/health`, `/ready` and `/metrics`,
 * so that the step, decision and webhook metrics of worker processes can be scraped too.
 */
export async function buildOperationsApp(ctx: AppContext): Promise<App> {
  const app = Fastify({
    loggerInstance: ctx.log as FastifyBaseLogger,
    genReqId: (req) => requestIdFrom(req.headers["x-request-id"], uuid),
    logController: new LogController({ disableRequestLogging: true }),
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.addHook("onRequest", async (request, reply) => {
    reply.header("x-request-id", request.id);
  });
  installErrorHandling(app);
  await operationsRoutes(app, ctx);
  return app;
}
