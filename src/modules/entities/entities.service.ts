import type { AppContext } from "../../platform/context.js";
import { isUuid } from "../../platform/crypto.js";
import { badRequest, notFound } from "../../platform/errors.js";
import { getCaseSummaries } from "../cases/index.js";
import { requireTenant } from "../tenants/index.js";
import {
  type EntityRow,
  entitiesOfCase,
  entityActivity,
  entityCases,
  findEntity,
  findEntityById,
  linkedEntities,
  relatedCases,
} from "./entities.repo.js";
import { ENTITY_TYPES, type EntityType, normalizeValue } from "./keys.js";

/** An entity as the operator API shows it. */
export interface EntityView {
  entityId: string;
  type: EntityType;
  value: string;
  firstSeenAt: string;
  lastSeenAt: string;
  caseCount: number;
}

/** How many linked entities an entity's page shows, most shared first. */
export const LINKED_LIMIT = 100;
const DEFAULT_PAGE = 50;
const MAX_PAGE = 200;

async function viewsOf(ctx: AppContext, rows: EntityRow[]): Promise<EntityView[]> {
  const activity = await entityActivity(
    ctx.db.root,
    rows.map((r) => r.id),
  );
  return rows.map((r) => {
    const seen = activity.get(r.id);
    return {
      entityId: r.id,
      type: r.type as EntityType,
      value: r.value,
      firstSeenAt: r.first_seen_at.toISOString(),
      lastSeenAt: (seen?.lastSeenAt ?? r.first_seen_at).toISOString(),
      caseCount: seen?.caseCount ?? 0,
    };
  });
}

/** The tenant's entity of a type and value (the value normalised as cases' keys are). */
export async function findEntities(
  ctx: AppContext,
  tenantId: string,
  query: { type: string; value: string },
): Promise<{ entities: EntityView[] }> {
  await requireTenant(ctx.db.root, tenantId);
  if (!(ENTITY_TYPES as readonly string[]).includes(query.type)) {
    throw badRequest(`type must be one of ${ENTITY_TYPES.join(", ")}`, [
      { path: "type", message: "is not an entity type" },
    ]);
  }
  const value = normalizeValue(query.type, query.value);
  const row = value === "" ? undefined : await findEntity(ctx.db.root, tenantId, query.type, value);
  return { entities: await viewsOf(ctx, row ? [row] : []) };
}

async function requireEntity(ctx: AppContext, tenantId: string, entityId: string): Promise<EntityRow> {
  await requireTenant(ctx.db.root, tenantId);
  const row = isUuid(entityId) ? await findEntityById(ctx.db.root, tenantId, entityId) : undefined;
  if (!row) throw notFound("entity");
  return row;
}

/** One entity, with the entities that share a case with it (most shared first). */
export async function getEntity(ctx: AppContext, tenantId: string, entityId: string) {
  const row = await requireEntity(ctx, tenantId, entityId);
  const [[view], linked] = await Promise.all([
    viewsOf(ctx, [row]),
    linkedEntities(ctx.db.root, tenantId, row.id, LINKED_LIMIT),
  ]);
  return {
    ...(view as EntityView),
    linked: linked.map((l) => ({
      entityId: l.id,
      type: l.type as EntityType,
      value: l.value,
      sharedCases: Number(l.shared),
    })),
  };
}

function decodeCursor(cursor: string): { caseTime: Date; caseId: string } {
  const [at, id] = Buffer.from(cursor, "base64url").toString("utf8").split("|");
  const caseTime = at ? new Date(at) : undefined;
  if (!caseTime || Number.isNaN(caseTime.getTime()) || !id || !isUuid(id)) {
    throw badRequest("cursor is not one this API returned", [{ path: "cursor", message: "is not valid" }]);
  }
  return { caseTime, caseId: id };
}

/** An entity's cases, newest first (by their time), as `GET /cases` lists them. */
export async function getEntityCases(
  ctx: AppContext,
  tenantId: string,
  entityId: string,
  query: { cursor?: string; limit?: number },
) {
  const row = await requireEntity(ctx, tenantId, entityId);
  const limit = Math.min(query.limit ?? DEFAULT_PAGE, MAX_PAGE);
  const after = query.cursor ? decodeCursor(query.cursor) : undefined;
  const page = await entityCases(ctx.db.root, row.id, limit + 1, after);
  const shown = page.slice(0, limit);
  const last = shown.at(-1);
  return {
    cases: await getCaseSummaries(
      ctx,
      tenantId,
      shown.map((p) => p.case_id),
    ),
    nextCursor:
      page.length > limit && last
        ? Buffer.from(`${last.case_time.toISOString()}|${last.case_id}`).toString("base64url")
        : null,
  };
}

/** How many related cases a case page shows. */
export const RELATED_LIMIT = 20;

/** A case's entities (type, value, the role the key had), for the case page's links. */
export async function getCaseEntities(ctx: AppContext, tenantId: string, caseId: string) {
  if (!isUuid(caseId)) return [];
  const rows = await entitiesOfCase(ctx.db.root, tenantId, caseId);
  return rows.map((r) => ({ entityId: r.id, type: r.type as EntityType, value: r.value, role: r.role }));
}

/** The other cases sharing a key with this one, newest first (up to 20), with a key each shares. */
export async function getRelatedCases(ctx: AppContext, tenantId: string, caseId: string) {
  if (!isUuid(caseId)) return [];
  const related = await relatedCases(ctx.db.root, tenantId, caseId, RELATED_LIMIT);
  const summaries = await getCaseSummaries(
    ctx,
    tenantId,
    related.map((r) => r.case_id),
  );
  const shared = new Map(related.map((r) => [r.case_id, { type: r.type as EntityType, value: r.value }]));
  return summaries.map((summary) => ({
    ...summary,
    shares: shared.get(summary.caseId) as { type: EntityType; value: string },
  }));
}
