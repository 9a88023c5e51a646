import { Type } from "typebox";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { emptyResponse } from "../../platform/openapi.js";
import { routeGroup } from "../../platform/route-group.js";
import { operatorActor } from "../users/index.js";
import {
  DEFAULT_VENDOR_TIMEOUT_MS,
  getProviderConfig,
  getProviderConfigs,
  putProviderConfig,
  removeProviderConfig,
} from "./provider-configs.service.js";

const ErrorBody = Type.Object(
  {
    error: Type.String(),
    details: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
  },
  { additionalProperties: true },
);

const ProviderConfig = Type.Object({
  brokerId: Type.String({ description: "`sumsub` or `opensanctions`" }),
  baseUrl: Type.String(),
  inboundWebhookUrl: Type.String({
    description: "The URL to register at the vendor for its webhooks (kept across updates)",
  }),
  webhookSecretSet: Type.Boolean({ description: "Whether a webhook secret is stored (never returned)" }),
  timeoutMs: Type.Integer(),
  configuredAt: Type.String({ format: "date-time" }),
});

const Params = Type.Object({ tenantId: Type.String(), brokerId: Type.String() });
const TAGS = ["operator: providers"];

export function providerConfigsRoutes(app: App, ctx: AppContext): void {
  const operator = routeGroup(app, TAGS, { admin: true });

  operator.put(
    "/admin/tenants/:tenantId/providers/:brokerId",
    {
      operationId: "putProviderConfig",
      summary: "Configure a verification provider for a tenant",
      description:
        "`sumsub`: `credentials: {appToken, secretKey}` and `webhookSecret` (kept when omitted on a later " +
        "update). `opensanctions`: `credentials: {apiKey}`. Credentials and secrets are stored encrypted and " +
        "never returned. Unless private targets are allowed, a `baseUrl` resolving to a private address is " +
        "refused. 400 lists every problem; 404 for an unknown tenant or broker.",
      params: Params,
      body: Type.Object(
        {
          baseUrl: Type.String({
            minLength: 1,
            description: "The vendor's API, its sandbox, or a simulator",
          }),
          credentials: Type.Object({}, { additionalProperties: true }),
          webhookSecret: Type.Optional(Type.String({ maxLength: 512 })),
          timeoutMs: Type.Optional(
            Type.Integer({ minimum: 100, maximum: 60_000, default: DEFAULT_VENDOR_TIMEOUT_MS }),
          ),
        },
        { additionalProperties: false },
      ),
      response: { 200: ProviderConfig, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody },
    },
    async (request) =>
      putProviderConfig(
        ctx,
        request.params.tenantId,
        request.params.brokerId,
        { ...request.body, credentials: request.body.credentials as Record<string, unknown> },
        operatorActor(),
      ),
  );

  operator.get(
    "/admin/tenants/:tenantId/providers",
    {
      operationId: "listProviderConfigs",
      summary: "List a tenant's provider configurations (never the credentials)",
      description: "404 for an unknown tenant.",
      params: Type.Object({ tenantId: Type.String() }),
      response: {
        200: Type.Object({ providers: Type.Array(ProviderConfig) }),
        401: ErrorBody,
        404: ErrorBody,
      },
    },
    async (request) => ({ providers: await getProviderConfigs(ctx, request.params.tenantId) }),
  );

  operator.get(
    "/admin/tenants/:tenantId/providers/:brokerId",
    {
      operationId: "getProviderConfig",
      summary: "Read one provider configuration (never the credentials)",
      description: "404 for an unknown tenant or broker, or a broker the tenant has not configured.",
      params: Params,
      response: { 200: ProviderConfig, 401: ErrorBody, 404: ErrorBody },
    },
    async (request) => getProviderConfig(ctx, request.params.tenantId, request.params.brokerId),
  );

  operator.delete(
    "/admin/tenants/:tenantId/providers/:brokerId",
    {
      operationId: "deleteProviderConfig",
      summary: "Delete a provider configuration",
      description:
        "Workflow versions naming the broker can no longer be published or dry-run, and the inbound " +
        "webhook URL answers 404. 404 when there is no such configuration.",
      params: Params,
      response: { 204: emptyResponse("Deleted"), 401: ErrorBody, 404: ErrorBody },
    },
    async (request, reply) => {
      await removeProviderConfig(ctx, request.params.tenantId, request.params.brokerId, operatorActor());
      return reply.status(204).send();
    },
  );
}
