import { Type } from "typebox";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { createTenant, getTenants } from "./tenants.service.js";

const Tenant = Type.Object({
  tenantId: Type.String({ format: "uuid" }),
  name: Type.String(),
  createdAt: Type.String({ format: "date-time" }),
});

export function tenantsRoutes(app: App, ctx: AppContext): void {
  app.post(
    "/admin/tenants",
    {
      config: { admin: true },
      schema: {
        tags: ["operator: tenants"],
        operationId: "createTenant",
        summary: "Create a tenant",
        description:
          "A new tenant with no keys, workflows or webhooks yet; its `tenantId` names it in every other operator call.",
        body: Type.Object(
          { name: Type.String({ minLength: 1, maxLength: 200 }) },
          { additionalProperties: false },
        ),
        response: { 201: Tenant },
      },
    },
    async (request, reply) => reply.status(201).send(await createTenant(ctx, request.body.name)),
  );

  app.get(
    "/admin/tenants",
    {
      config: { admin: true },
      schema: {
        tags: ["operator: tenants"],
        operationId: "listTenants",
        summary: "List tenants",
        description: "Every tenant, oldest first.",
        response: { 200: Type.Object({ tenants: Type.Array(Tenant) }) },
      },
    },
    async () => ({ tenants: await getTenants(ctx) }),
  );
}
