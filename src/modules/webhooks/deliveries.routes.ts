import { type TSchema, Type } from "typebox";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { routeGroup } from "../../platform/route-group.js";
import { operatorBy } from "../users/index.js";
import {
  getDeliveries,
  getDelivery,
  REDELIVER_BATCH,
  redeliver,
  redeliverFailed,
} from "./deliveries.service.js";
import { webhookAudit } from "./webhook-configs.service.js";

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

const Attempt = Type.Object({
  attempt: Type.Integer(),
  at: Type.String({ format: "date-time", description: "When the attempt started" }),
  target: Nullable(Type.String({ description: "Origin and path the attempt went to (no query string)" })),
  secretId: Nullable(Type.String()),
  statusCode: Nullable(Type.Integer()),
  latencyMs: Nullable(Type.Integer()),
  error: Nullable(Type.String()),
  responseBody: Nullable(Type.String({ description: "The first 2 KiB of the receiver's answer" })),
});

const Delivery = Type.Object({
  deliveryId: Type.String({ format: "uuid" }),
  eventId: Type.String({ format: "uuid" }),
  eventType: Type.String(),
  caseId: Nullable(Type.String({ format: "uuid" })),
  webhookKey: Type.String(),
  webhookId: Type.String({ format: "uuid" }),
  status: Type.Union([Type.Literal("pending"), Type.Literal("succeeded"), Type.Literal("failed")]),
  attemptCount: Type.Integer(),
  nextAttemptAt: Nullable(Type.String({ format: "date-time" })),
  lastStatusCode: Nullable(Type.Integer()),
  lastError: Nullable(Type.String()),
  redeliveryOf: Nullable(Type.String({ format: "uuid" })),
  redeliveredAs: Nullable(Type.String({ format: "uuid" })),
  createdAt: Type.String({ format: "date-time" }),
  completedAt: Nullable(Type.String({ format: "date-time" })),
  attempts: Type.Array(Attempt),
});

const DeliveryParams = Type.Object({ deliveryId: Type.String() });

export function deliveriesRoutes(app: App, ctx: AppContext): void {
  const operator = routeGroup(app, ["operator: webhooks"], { admin: true });

  operator.get(
    "/admin/tenants/:tenantId/webhook-deliveries",
    {
      operationId: "listWebhookDeliveries",
      summary: "A tenant's webhook deliveries, newest first, with every attempt",
      description: "Filter by `status`, `eventType` and `caseId`; page with `cursor`.",
      params: Type.Object({ tenantId: Type.String() }),
      querystring: Type.Object({
        status: Type.Optional(Type.String({ description: "`pending`, `succeeded` or `failed`" })),
        eventType: Type.Optional(Type.String()),
        caseId: Type.Optional(Type.String()),
        webhookKey: Type.Optional(Type.String()),
        limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 25 })),
        cursor: Type.Optional(Type.String()),
      }),
      response: {
        200: Type.Object({ deliveries: Type.Array(Delivery), nextCursor: Nullable(Type.String()) }),
      },
    },
    async (request) => getDeliveries(ctx, request.params.tenantId, request.query),
  );

  operator.get(
    "/admin/webhook-deliveries/:deliveryId",
    {
      operationId: "getWebhookDelivery",
      summary: "One webhook delivery with its attempts and the exact body they sent",
      description:
        "Every attempt with its time, status code, latency, error and the start of the receiver's answer.",
      params: DeliveryParams,
      response: {
        200: Type.Intersect([Delivery, Type.Object({ tenantId: Type.String(), body: Type.String() })]),
      },
    },
    async (request) => getDelivery(ctx, request.params.deliveryId),
  );

  operator.post(
    "/admin/webhook-deliveries/:deliveryId/redeliver",
    {
      operationId: "redeliverWebhook",
      summary: "Send a delivery's event again, as a new delivery with a fresh webhookId",
      description: "202: a new delivery of the same event is queued, with a fresh `webhookId`.",
      params: DeliveryParams,
      response: { 202: Delivery },
    },
    async (request, reply) => {
      const { deliveryId } = request.params;
      const audit = webhookAudit.redeliver((tenantId) => operatorBy(tenantId), deliveryId);
      return reply.status(202).send(await redeliver(ctx, deliveryId, audit));
    },
  );

  operator.post(
    "/admin/tenants/:tenantId/webhook-deliveries/redeliver-failed",
    {
      operationId: "redeliverFailedWebhooks",
      summary: "Redeliver every failed delivery of a tenant created since a time",
      description:
        "Each failed delivery not yet redelivered becomes a new delivery with a fresh webhookId, " +
        `so an event goes out once however often this is called. At most ${REDELIVER_BATCH} per call; ` +
        "`hasMore` says to call again.",
      params: Type.Object({ tenantId: Type.String() }),
      body: Type.Object(
        {
          since: Type.String({ format: "date-time" }),
          until: Type.Optional(Type.String({ format: "date-time" })),
          eventType: Type.Optional(Type.String()),
          webhookKey: Type.Optional(Type.String()),
        },
        { additionalProperties: false },
      ),
      response: {
        202: Type.Object({
          redelivered: Type.Integer(),
          deliveryIds: Type.Array(Type.String({ format: "uuid" })),
          hasMore: Type.Boolean(),
        }),
      },
    },
    async (request, reply) => {
      const { tenantId } = request.params;
      const audit = webhookAudit.redeliverFailed(operatorBy(tenantId), request.body);
      return reply.status(202).send(await redeliverFailed(ctx, tenantId, request.body, audit));
    },
  );
}
