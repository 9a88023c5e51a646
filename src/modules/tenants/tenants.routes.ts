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
        summary: "Create a tenant",
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
        summary: "List tenants",
        response: { 200: Type.Object({ tenants: Type.Array(Tenant) }) },
      },
    },
    async () => ({ tenants: await getTenants(ctx) }),
  );
}
