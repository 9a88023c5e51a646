import { Type } from "typebox";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { emptyResponse } from "../../platform/openapi.js";
import { routeGroup } from "../../platform/route-group.js";
import { operatorBy } from "../users/index.js";
import { apiKeyAudit, createApiKey, getApiKeys, removeApiKey } from "./api-keys.service.js";
import { SCOPES } from "./scopes.js";

const RateLimit = Type.Object(
  {
    perSecond: Type.Integer({
      minimum: 1,
      maximum: 1_000_000,
      description: "Requests a second the bucket refills",
    }),
    burst: Type.Integer({
      minimum: 1,
      maximum: 10_000_000,
      description: "Requests the bucket holds at most",
    }),
  },
  { additionalProperties: false },
);

const ApiKey = Type.Object({
  keyId: Type.String(),
  name: Type.String(),
  scopes: Type.Array(Type.String()),
  keyHint: Type.String({ description: "The key's prefix and first characters, to recognise it" }),
  createdAt: Type.String({ format: "date-time" }),
  lastUsedAt: Type.Union([Type.String({ format: "date-time" }), Type.Null()], {
    description: "Recorded at most once a minute",
  }),
  expiresAt: Type.Union([Type.String({ format: "date-time" }), Type.Null()]),
  rateLimit: Type.Union([RateLimit, Type.Null()], { description: "null: unlimited" }),
});

const TenantParams = Type.Object({ tenantId: Type.String() });

export function apiKeysRoutes(app: App, ctx: AppContext): void {
  const operator = routeGroup(app, ["operator: API keys"], { admin: true });

  operator.post(
    "/admin/tenants/:tenantId/api-keys",
    {
      operationId: "createApiKey",
      summary: "Create an API key; its value is in this answer and never again",
      description:
        "The key value (`cds_live_…` in production, `cds_test_…` in staging) is returned once and stored only " +
        "as a hash. `rateLimit` defaults to 1,000 requests/s with a burst of 2,000; `null` for none.",
      params: TenantParams,
      body: Type.Object(
        {
          name: Type.String({ minLength: 1, maxLength: 200 }),
          scopes: Type.Array(Type.Enum([...SCOPES]), { minItems: 1 }),
          expiresAt: Type.Optional(Type.Union([Type.String({ format: "date-time" }), Type.Null()])),
          rateLimit: Type.Optional(Type.Union([RateLimit, Type.Null()])),
        },
        { additionalProperties: false },
      ),
      response: { 201: Type.Intersect([ApiKey, Type.Object({ key: Type.String() })]) },
    },
    async (request, reply) =>
      reply
        .status(201)
        .send(
          await createApiKey(
            ctx,
            request.params.tenantId,
            request.body,
            apiKeyAudit.create(operatorBy(request.params.tenantId)),
          ),
        ),
  );

  operator.get(
    "/admin/tenants/:tenantId/api-keys",
    {
      operationId: "listApiKeys",
      summary: "List a tenant's live API keys (never their values)",
      description:
        "Each key with its `keyId`, name, scopes, rate limit, `createdAt`, `lastUsedAt` and `expiresAt`. Deleted keys are not listed.",
      params: TenantParams,
      response: { 200: Type.Object({ apiKeys: Type.Array(ApiKey) }) },
    },
    async (request) => ({ apiKeys: await getApiKeys(ctx, request.params.tenantId) }),
  );

  operator.delete(
    "/admin/tenants/:tenantId/api-keys/:keyId",
    {
      operationId: "deleteApiKey",
      summary: "Delete an API key; it fails from the next request on",
      description: "204 once deleted: the key is refused from the next request on, on every process.",
      params: Type.Object({ tenantId: Type.String(), keyId: Type.String() }),
      response: { 204: emptyResponse("Deleted") },
    },
    async (request, reply) => {
      const { tenantId, keyId } = request.params;
      await removeApiKey(ctx, tenantId, keyId, apiKeyAudit.delete(operatorBy(tenantId), keyId));
      return reply.status(204).send();
    },
  );
}
