import { Type } from "typebox";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { emptyResponse } from "../../platform/openapi.js";
import { routeGroup } from "../../platform/route-group.js";
import { operatorBy } from "../users/index.js";
import {
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_TIMEOUT_MS,
  getWebhookConfig,
  getWebhookConfigs,
  MAX_SECRETS,
  putWebhookConfig,
  removeWebhookConfig,
  webhookAudit,
} from "./webhook-configs.service.js";

const WebhookConfig = Type.Object({
  webhookKey: Type.String({ description: "`default` is the tenant's default configuration" }),
  url: Type.String(),
  secrets: Type.Array(Type.Object({ id: Type.Union([Type.String(), Type.Null()]) }), {
    description: "The rotation set's ids; secret values are never returned",
  }),
  activeSecretId: Type.Union([Type.String(), Type.Null()]),
  maxAttempts: Type.Integer(),
  timeoutMs: Type.Integer(),
  createdAt: Type.String({ format: "date-time" }),
  updatedAt: Type.String({ format: "date-time" }),
});

const ConfigParams = Type.Object({ tenantId: Type.String(), webhookKey: Type.String() });

export function webhookConfigsRoutes(app: App, ctx: AppContext): void {
  const operator = routeGroup(app, ["operator: webhooks"], { admin: true });

  operator.put(
    "/admin/tenants/:tenantId/webhooks/:webhookKey",
    {
      operationId: "putWebhookConfig",
      summary: "Create or replace a webhook configuration (`default`, or a named one)",
      description:
        "Secrets form a rotation set; `activeSecretId` signs new attempts and is sent as " +
        "`X-Service-Secret-ID`. An entry `{id}` without `secret` keeps the value stored under that id, " +
        "so rotating needs only the new secret. A single secret may omit its id (then no " +
        "`X-Service-Secret-ID` is sent). Unless private targets are allowed, a URL whose host " +
        "resolves to a private, loopback, link-local or metadata address is refused.",
      params: ConfigParams,
      body: Type.Object(
        {
          url: Type.String({ minLength: 1 }),
          secrets: Type.Array(
            Type.Object(
              { id: Type.Optional(Type.String()), secret: Type.Optional(Type.String()) },
              { additionalProperties: false },
            ),
            { minItems: 1, maxItems: MAX_SECRETS },
          ),
          activeSecretId: Type.Optional(Type.Union([Type.String(), Type.Null()])),
          maxAttempts: Type.Optional(
            Type.Integer({ minimum: 1, maximum: 20, default: DEFAULT_MAX_ATTEMPTS }),
          ),
          timeoutMs: Type.Optional(
            Type.Integer({ minimum: 100, maximum: 30_000, default: DEFAULT_TIMEOUT_MS }),
          ),
        },
        { additionalProperties: false },
      ),
      response: { 200: WebhookConfig },
    },
    async (request) => {
      const { tenantId, webhookKey } = request.params;
      const audit = webhookAudit.set(operatorBy(tenantId), webhookKey);
      return putWebhookConfig(ctx, tenantId, webhookKey, request.body, audit);
    },
  );

  operator.get(
    "/admin/tenants/:tenantId/webhooks",
    {
      operationId: "listWebhookConfigs",
      summary: "List a tenant's webhook configurations (never the secret values)",
      description:
        "Each configuration with its URL, secret ids, active secret and limits; never a secret's value.",
      params: Type.Object({ tenantId: Type.String() }),
      response: { 200: Type.Object({ webhooks: Type.Array(WebhookConfig) }) },
    },
    async (request) => ({ webhooks: await getWebhookConfigs(ctx, request.params.tenantId) }),
  );

  operator.get(
    "/admin/tenants/:tenantId/webhooks/:webhookKey",
    {
      operationId: "getWebhookConfig",
      summary: "Read one webhook configuration (never the secret values)",
      description: "Its URL, secret ids, active secret and limits; never a secret's value.",
      params: ConfigParams,
      response: { 200: WebhookConfig },
    },
    async (request) => getWebhookConfig(ctx, request.params.tenantId, request.params.webhookKey),
  );

  operator.delete(
    "/admin/tenants/:tenantId/webhooks/:webhookKey",
    {
      operationId: "deleteWebhookConfig",
      summary: "Delete a webhook configuration",
      description:
        "Deliveries routed to it fail at their next attempt, naming the missing configuration; " +
        "they can be redelivered once it exists again.",
      params: ConfigParams,
      response: { 204: emptyResponse("Deleted") },
    },
    async (request, reply) => {
      const { tenantId, webhookKey } = request.params;
      await removeWebhookConfig(
        ctx,
        tenantId,
        webhookKey,
        webhookAudit.delete(operatorBy(tenantId), webhookKey),
      );
      return reply.status(204).send();
    },
  );
}
