import { Type } from "typebox";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { routeGroup } from "../../platform/route-group.js";
import { createTenant, getTenants } from "./tenants.service.js";

const Tenant = Type.Object({
  tenantId: Type.String({ format: "uuid" }),
  name: Type.String(),
  createdAt: Type.String({ format: "date-time" }),
});

export function tenantsRoutes(app: App, ctx: AppContext): void {
  const operator = routeGroup(app, ["operator: tenants"], { admin: true });

  operator.post(
    "/admin/tenants",
    {
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
    async (request, reply) => reply.status(201).send(await createTenant(ctx, request.body.name)),
  );

  operator.get(
    "/admin/tenants",
    {
      operationId: "listTenants",
      summary: "List tenants",
      description: "Every tenant, oldest first.",
      response: { 200: Type.Object({ tenants: Type.Array(Tenant) }) },
    },
    async () => ({ tenants: await getTenants(ctx) }),
  );
}
