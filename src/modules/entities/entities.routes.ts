import { Type } from "typebox";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { named } from "../../platform/openapi.js";
import { CaseSummary } from "../cases/index.js";
import { findEntities, getEntity, getEntityCases, LINKED_LIMIT } from "./entities.service.js";
import { ENTITY_TYPES } from "./keys.js";

const TAGS = ["operator: entities"];
const Timestamp = Type.String({ format: "date-time" });

const Entity = Type.Object({
  entityId: Type.String({ format: "uuid" }),
  type: Type.Enum(ENTITY_TYPES),
  value: Type.String({
    description:
      "Normalised: trimmed; e-mail lower-cased; IBAN upper-cased without spaces; phone + and digits",
  }),
  firstSeenAt: Timestamp,
  lastSeenAt: Type.String({ format: "date-time", description: "The time of its newest case" }),
  caseCount: Type.Integer({ description: "The cases linked to it (dry runs are never linked)" }),
});

const LinkedEntity = Type.Object({
  entityId: Type.String({ format: "uuid" }),
  type: Type.Enum(ENTITY_TYPES),
  value: Type.String(),
  sharedCases: Type.Integer(),
});

const EntityWithLinks = Type.Object({
  ...Entity.properties,
  linked: Type.Array(LinkedEntity, {
    description: `The other entities that share a case with it, most shared first (up to ${LINKED_LIMIT})`,
  }),
});

named({ Entity, EntityWithLinks, LinkedEntity });

const EntityParams = Type.Object({ tenantId: Type.String(), entityId: Type.String() });

/** The operator API of entities (contract section 7). */
export function entitiesRoutes(app: App, ctx: AppContext): void {
  app.get(
    "/admin/tenants/:tenantId/entities",
    {
      config: { admin: true },
      schema: {
        tags: TAGS,
        operationId: "findEntities",
        summary: "Find a tenant's entity by type and value",
        description:
          "The value is normalised as cases' keys are before it is matched; `entities` holds the one match, or nothing.",
        params: Type.Object({ tenantId: Type.String() }),
        querystring: Type.Object(
          { type: Type.String({ maxLength: 64 }), value: Type.String({ minLength: 1, maxLength: 256 }) },
          { additionalProperties: false },
        ),
        response: { 200: Type.Object({ entities: Type.Array(Entity) }) },
      },
    },
    async (request) => findEntities(ctx, request.params.tenantId, request.query),
  );

  app.get(
    "/admin/tenants/:tenantId/entities/:entityId",
    {
      config: { admin: true },
      schema: {
        tags: TAGS,
        operationId: "getEntity",
        summary: "Read an entity with the entities it shares cases with",
        description: "404 for an unknown entity, or one of another tenant.",
        params: EntityParams,
        response: { 200: EntityWithLinks },
      },
    },
    async (request) => getEntity(ctx, request.params.tenantId, request.params.entityId),
  );

  app.get(
    "/admin/tenants/:tenantId/entities/:entityId/cases",
    {
      config: { admin: true },
      schema: {
        tags: TAGS,
        operationId: "listEntityCases",
        summary: "List an entity's cases, newest first",
        description:
          "Newest first by the case's time (its eventTimestamp, else its creation), as `GET /cases` lists them.",
        params: EntityParams,
        querystring: Type.Object(
          {
            cursor: Type.Optional(Type.String({ maxLength: 200 })),
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            cases: Type.Array(CaseSummary),
            nextCursor: Type.Union([Type.String(), Type.Null()]),
          }),
        },
      },
    },
    async (request) => getEntityCases(ctx, request.params.tenantId, request.params.entityId, request.query),
  );
}
