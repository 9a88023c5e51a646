import { Type } from "typebox";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { emptyResponse, errorResponse } from "../../platform/openapi.js";
import { routeGroup } from "../../platform/route-group.js";
import { ROLES } from "./roles.js";
import { createUser, getUsers, removeUser } from "./users.service.js";

const User = Type.Object({
  userId: Type.String({ format: "uuid" }),
  email: Type.String(),
  name: Type.String(),
  role: Type.Enum([...ROLES]),
  status: Type.Enum(["invited", "active"], { description: "`invited` until the setup link has been used" }),
  createdAt: Type.String({ format: "date-time" }),
});

const TenantParams = Type.Object({ tenantId: Type.String() });
const TAGS = ["operator: console users"];

/** The operator API of console users (contract section 3). */
export function usersRoutes(app: App, ctx: AppContext): void {
  const operator = routeGroup(app, TAGS, { admin: true });

  operator.post(
    "/admin/tenants/:tenantId/users",
    {
      operationId: "createConsoleUser",
      summary: "Create a console user; the answer's setupUrl is a one-time link to set a password",
      description:
        "The email is the sign-in name and is unique across tenants. `setupUrl` is shown this once and " +
        "stays usable for 7 days.",
      params: TenantParams,
      body: Type.Object(
        {
          email: Type.String({ minLength: 3, maxLength: 320 }),
          name: Type.String({ minLength: 1, maxLength: 200 }),
          role: Type.Enum([...ROLES]),
        },
        { additionalProperties: false },
      ),
      response: {
        201: Type.Intersect([
          User,
          Type.Object({ setupUrl: Type.String(), setupExpiresAt: Type.String({ format: "date-time" }) }),
        ]),
        400: errorResponse("Invalid email, name or role"),
        404: errorResponse("Unknown tenant"),
        409: errorResponse("A user with this email exists"),
      },
    },
    async (request, reply) =>
      reply.status(201).send(await createUser(ctx, request.params.tenantId, request.body, "operator")),
  );

  operator.get(
    "/admin/tenants/:tenantId/users",
    {
      operationId: "listConsoleUsers",
      summary: "List a tenant's console users",
      description: "Every console user of the tenant, with their role and whether they have set a password.",
      params: TenantParams,
      response: {
        200: Type.Object({ users: Type.Array(User) }),
        404: errorResponse("Unknown tenant"),
      },
    },
    async (request) => ({ users: await getUsers(ctx, request.params.tenantId) }),
  );

  operator.delete(
    "/admin/tenants/:tenantId/users/:userId",
    {
      operationId: "deleteConsoleUser",
      summary: "Delete a console user; their sessions end at once",
      description: "The user can no longer sign in, and every session of theirs ends on its next request.",
      params: Type.Object({ tenantId: Type.String(), userId: Type.String() }),
      response: {
        204: emptyResponse("Deleted"),
        404: errorResponse("Unknown tenant or user"),
      },
    },
    async (request, reply) => {
      await removeUser(ctx, request.params.tenantId, request.params.userId, "operator");
      return reply.status(204).send();
    },
  );
}
