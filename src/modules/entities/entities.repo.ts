import { type RawBuilder, sql } from "kysely";
import { type Executor, findRow, type Row } from "../../platform/db/index.js";
import type { AcceptedCase } from "../cases/index.js";
import { ENTITY_TYPES, entityId, entityKeysOf, normalizeValue, transactionAmount } from "./keys.js";
import { ALL_WEEKS, inWeeks, weekOf, weeksBack } from "./weeks.js";

export type EntityRow = Row<"entities">;

/**
 * The most keys a case may have for its links to carry its other entities (`peers`, at most one
 * fewer): a case with more has `peers` NULL, and a figure reads its links by primary key instead.
 * It bounds what a case writes (its links times their peers grows with its keys squared) and keeps
 * an index entry small. Migration 0020 fills existing links with the same bound.
 */
const PEERS_MAX_KEYS = 16;

/**
 * What the statement that accepts cases writes for entities: each new key's entity (a key seen
 * before writes nothing), and one link per case and entity, for the cases it inserted, with the
 * case's other entities (`entity_peer`, migration 0020) that a countDistinct figure counts. Dry-run
 * cases are not linked: they are not part of what the tenant knows.
 */
export function entityWrites(cases: readonly AcceptedCase[]): RawBuilder<unknown> | undefined {
  const keys = cases.flatMap((c) => {
    if (c.dryRun) return [];
    const { amount, currency } = transactionAmount(c.subject);
    // One object literal a link, not a spread of the key (decision 0038).
    return entityKeysOf(c.subject, c.externalCustomerId).map((k) => ({
      type: k.type,
      value: k.value,
      role: k.role,
      caseId: c.id,
      tenantId: c.tenantId,
      entityId: entityId(c.tenantId, k.type, k.value),
      caseType: c.type,
      amount,
      currency,
    }));
  });
  if (keys.length === 0) return undefined;
  const values = sql.join(
    keys.map(
      (k) =>
        sql`(${k.caseId}::uuid, ${k.entityId}::uuid, ${k.tenantId}::uuid, ${k.type}::text, ${k.value}::text, ${k.role}::text, ${k.caseType}::text, ${k.amount}::double precision, ${k.currency}::text)`,
    ),
  );
  // Entities are inserted in key order, so two statements that meet the same new keys wait for
  // each other in one order instead of deadlocking.
  return sql`
    entity_key (case_id, entity_id, tenant_id, type, value, role, case_type, amount, currency) AS (VALUES ${values}),
    entity_peers AS (
      SELECT case_id, array_agg(entity_peer(entity_id, type)) AS peers
      FROM entity_key
      GROUP BY case_id
      HAVING count(*) <= ${PEERS_MAX_KEYS}
    ),
    entity_new AS (
      INSERT INTO entities (id, tenant_id, type, value)
      SELECT DISTINCT k.entity_id, k.tenant_id, k.type, k.value
      FROM entity_key k JOIN kase ON kase.id = k.case_id
      ORDER BY k.entity_id
      ON CONFLICT (tenant_id, type, value) DO NOTHING
    ),
    entity_link AS (
      INSERT INTO case_entities
        (case_id, entity_id, tenant_id, entity_type, role, case_time, accepted_at, case_type, amount, currency, peers)
      SELECT k.case_id, k.entity_id, k.tenant_id, k.type, k.role, kase.case_time, kase.created_at,
        k.case_type, k.amount, k.currency, array_remove(p.peers, entity_peer(k.entity_id, k.type))
      FROM entity_key k JOIN kase ON kase.id = k.case_id LEFT JOIN entity_peers p ON p.case_id = k.case_id
    )`;
}

export function findEntity(db: Executor, tenantId: string, type: string, value: string) {
  return findRow(db, "entities", { tenant_id: tenantId, type, value });
}

export function findEntityById(db: Executor, tenantId: string, id: string) {
  return findRow(db, "entities", { tenant_id: tenantId, id });
}

/** How many cases an entity is linked to, and the time of the newest. */
export async function entityActivity(
  db: Executor,
  entityIds: readonly string[],
): Promise<Map<string, { caseCount: number; lastSeenAt: Date | null }>> {
  if (entityIds.length === 0) return new Map();
  const rows = await db
    .selectFrom("case_entities")
    .select(["entity_id", sql<string>`count(*)`.as("n"), sql<Date>`max(case_time)`.as("last")])
    .where(sql.raw<boolean>(inWeeks("case_entities", ALL_WEEKS)))
    .where("entity_id", "in", [...entityIds])
    .groupBy("entity_id")
    .execute();
  return new Map(rows.map((r) => [r.entity_id, { caseCount: Number(r.n), lastSeenAt: r.last }]));
}

/** The other entities that share a case with this one, most shared first (up to `limit`). */
export function linkedEntities(db: Executor, tenantId: string, id: string, limit: number) {
  return db
    .selectFrom("case_entities as mine")
    .innerJoin("case_entities as other", (j) =>
      j.onRef("other.case_id", "=", "mine.case_id").onRef("other.entity_id", "<>", "mine.entity_id"),
    )
    .innerJoin("entities as e", "e.id", "other.entity_id")
    .select(["e.id", "e.type", "e.value", sql<string>`count(*)`.as("shared")])
    .where(sql.raw<boolean>(inWeeks("mine", ALL_WEEKS)))
    .where("mine.entity_id", "=", id)
    .where("e.tenant_id", "=", tenantId)
    .groupBy(["e.id", "e.type", "e.value"])
    .orderBy(sql`count(*)`, "desc")
    .orderBy("e.type")
    .orderBy("e.value")
    .limit(limit)
    .execute();
}

/**
 * A page of an entity's cases, newest first (by the case's time), after a keyset position: the
 * entity's weeks newest first, each read in the index's order until the page is full, so a key
 * with 100,000 cases reads no more than the page.
 */
export async function entityCases(
  db: Executor,
  id: string,
  limit: number,
  after: { caseTime: Date; caseId: string } | undefined,
) {
  const { rows } = await sql<{ case_id: string; case_time: Date }>`
    SELECT p.case_id, p.case_time
    FROM unnest(${weeksBack(after?.caseTime)}) AS w (week)
    CROSS JOIN LATERAL (
      SELECT l.case_id, l.case_time FROM case_entities l
      WHERE ${sql.raw(weekOf("l.case_time"))} = w.week AND l.entity_id = ${id}
        ${after ? sql`AND (l.case_time, l.case_id) < (${after.caseTime}::timestamptz, ${after.caseId}::uuid)` : sql``}
      ORDER BY l.case_time DESC, l.case_id DESC
      LIMIT ${limit}) p
    LIMIT ${limit}`.execute(db);
  return rows;
}

/** A case's entities, with the role each key had on it. */
export function entitiesOfCase(db: Executor, tenantId: string, caseId: string) {
  return db
    .selectFrom("case_entities as l")
    .innerJoin("entities as e", "e.id", "l.entity_id")
    .select(["e.id", "e.type", "e.value", "l.role"])
    .where("l.case_id", "=", caseId)
    .where("l.tenant_id", "=", tenantId)
    .orderBy("e.type")
    .orderBy("e.value")
    .execute();
}

/**
 * The other cases sharing a key with this one, newest first, each with one key it shares. Each
 * of the case's entities gives at most `limit` of its newest cases from its index, its weeks read
 * newest first, so a key with 100,000 cases costs no more than a rare one.
 */
export async function relatedCases(db: Executor, tenantId: string, caseId: string, limit: number) {
  const { rows } = await sql<{ case_id: string; case_time: Date; type: string; value: string }>`
    SELECT DISTINCT ON (r.case_id) r.case_id, r.case_time, e.type, e.value
    FROM case_entities mine
    JOIN entities e ON e.id = mine.entity_id
    CROSS JOIN LATERAL (
      SELECT p.case_id, p.case_time
      FROM unnest(${weeksBack(undefined)}) AS w (week)
      CROSS JOIN LATERAL (
        SELECT o.case_id, o.case_time FROM case_entities o
        WHERE ${sql.raw(weekOf("o.case_time"))} = w.week AND o.entity_id = mine.entity_id
          AND o.case_id <> mine.case_id
        ORDER BY o.case_time DESC, o.case_id DESC
        LIMIT ${limit}) p
      LIMIT ${limit}
    ) r
    WHERE mine.case_id = ${caseId} AND mine.tenant_id = ${tenantId}
    ORDER BY r.case_id, e.type, e.value`.execute(db);
  return rows
    .sort((a, b) => b.case_time.getTime() - a.case_time.getTime() || (a.case_id < b.case_id ? 1 : -1))
    .slice(0, limit);
}

/**
 * The ids of a tenant's cases linked to an entity of any type holding this value (as each type
 * normalises it), as a subquery for another module's query of cases. The entities' ids are
 * derived from their keys, so no entity is read to find them.
 */
export function casesWithIdentifier(db: Executor, tenantId: string, value: string) {
  const ids = [
    ...new Set(
      ENTITY_TYPES.flatMap((type) => {
        const normal = normalizeValue(type, value);
        return normal === "" ? [] : [entityId(tenantId, type, normal)];
      }),
    ),
  ];
  const query = db
    .selectFrom("case_entities")
    .select("case_id")
    .where(sql.raw<boolean>(inWeeks("case_entities", ALL_WEEKS)))
    .where("tenant_id", "=", tenantId);
  return ids.length > 0 ? query.where("entity_id", "in", ids) : query.where(sql<boolean>`false`);
}
