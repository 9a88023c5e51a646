import { Type } from "typebox";
import type { App } from "./app-types.js";
import type { AppContext } from "./context.js";
import { safeEqual } from "./crypto.js";
import { AppError } from "./errors.js";
import {
  httpDuration,
  httpRequests,
  liveWorkers,
  metricsRegistry,
  refreshDatabaseGauges,
  WORKER_FRESH_SECONDS,
} from "./metrics.js";
import { errorResponse } from "./openapi.js";

/**
 * What a load balancer, an orchestrator and Prometheus ask of every process: `/health`, `/ready`
 * and `/metrics`, plus the count of every HTTP request by route and status.
 */
export async function operationsRoutes(app: App, ctx: AppContext): Promise<void> {
  app.addHook("onResponse", async (request, reply) => {
    const route = request.routeOptions.url ?? "unmatched";
    httpRequests.inc({ method: request.method, route, status: String(reply.statusCode) });
    httpDuration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
  });

  app.get(
    "/health",
    {
      schema: {
        tags: ["service"],
        operationId: "health",
        summary: "The process is up",
        description: "200 as long as the process answers; says nothing about the database or the workers.",
        security: [],
        response: { 200: Type.Object({ status: Type.Literal("ok") }, { description: "Up" }) },
      },
    },
    async () => ({ status: "ok" as const }),
  );

  app.get(
    "/ready",
    {
      schema: {
        tags: ["service"],
        operationId: "ready",
        summary: "The service can do its work",
        description: [
          "200 when the database answers and a worker (this process's or another's) has reported within",
          `the last ${WORKER_FRESH_SECONDS} s; otherwise 503, saying what is missing. An API process`,
          "(`CDS_ROLE=api`) is not ready while no worker runs: cases would be accepted and never run.",
          "With `CDS_BLOB_STORE=s3`, the bucket must answer too.",
        ].join(" "),
        security: [],
        response: {
          200: Type.Object({ status: Type.Literal("ready") }, { description: "Ready" }),
          503: errorResponse("Not ready: `error` says what is missing"),
        },
      },
    },
    async (request) => {
      let workers: number;
      try {
        workers = await liveWorkers(ctx.db);
      } catch (err) {
        request.log.warn({ err }, "readiness check failed");
        throw new AppError("unavailable", "database unreachable");
      }
      if (workers === 0) {
        throw new AppError(
          "unavailable",
          `no worker seen in the last ${WORKER_FRESH_SECONDS} s: start one (CDS_ROLE=worker or all)`,
        );
      }
      const blobProblem = await ctx.blobs.check();
      if (blobProblem) {
        request.log.warn({ blobStore: ctx.blobs.kind, ...blobProblem }, "readiness check failed");
        throw new AppError("unavailable", `document storage unavailable: ${blobProblem.message}`);
      }
      return { status: "ready" as const };
    },
  );

  app.get(
    "/metrics",
    {
      schema: {
        tags: ["service"],
        operationId: "metrics",
        summary: "Prometheus metrics",
        description:
          "The Prometheus text format. Requires `Authorization: Bearer <CDS_METRICS_TOKEN>` when that is set.",
        security: [{}, { metricsToken: [] }],
        response: {
          200: {
            description: "The metrics",
            content: { "text/plain": { schema: { type: "string" } } },
          },
          401: errorResponse("`CDS_METRICS_TOKEN` is set and was not presented"),
        },
      },
      onRequest: async (request) => {
        const token = ctx.config.metricsToken;
        if (token === undefined) return;
        const header = request.headers.authorization;
        const presented = header && /^bearer /i.test(header) ? header.slice(7) : undefined;
        if (!presented || !safeEqual(presented, token)) {
          throw new AppError(
            "unauthenticated",
            "missing or invalid metrics token: send Authorization: Bearer <token>",
          );
        }
      },
    },
    async (_request, reply) => {
      await refreshDatabaseGauges(ctx.db);
      // Sent as bytes: the route's documented text schema is not a serializer for it.
      return reply
        .type(metricsRegistry.contentType)
        .send(Buffer.from(await metricsRegistry.metrics()) as unknown as string);
    },
  );
}
