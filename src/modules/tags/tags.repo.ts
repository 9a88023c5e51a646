import { type Expression, sql } from "kysely";
import { type Executor, findRow, findRows } from "../../platform/db/index.js";

/**
 * The ids of a tenant's cases with a tag, as a subquery for another module's query of cases (the
 * tenant and the tag may be the outer query's columns).
 */
export function casesTagged(
  db: Executor,
  tenantId: string | Expression<string>,
  tag: string | Expression<string>,
) {
  return db
    .selectFrom("case_tags")
    .select("case_id")
    .where("tenant_id", "=", tenantId)
    .where("tag", "=", tag);
}

export interface CaseTagRow {
  tag: string;
  created_by: string;
  created_at: Date;
}

export interface TagOptionRow {
  tag: string;
  enabled: boolean;
  created_at: Date;
  updated_at: Date;
}

export function listCaseTags(db: Executor, tenantId: string, caseId: string): Promise<CaseTagRow[]> {
  return findRows(db, "case_tags", { tenant_id: tenantId, case_id: caseId }, ["created_at", "id"]);
}

export function findCaseTag(
  db: Executor,
  tenantId: string,
  caseId: string,
  tag: string,
): Promise<CaseTagRow | undefined> {
  return findRow(db, "case_tags", { tenant_id: tenantId, case_id: caseId, tag });
}

/**
 * Adds the tag when it is an enabled option and the case carries fewer than `limit` tags. Two
 * concurrent adds can both see `limit - 1`; callers hold the case's lock to keep the cap exact.
 */
export async function insertCaseTagIfAllowed(
  db: Executor,
  tenantId: string,
  caseId: string,
  tag: string,
  createdBy: string,
  limit: number,
): Promise<CaseTagRow | undefined> {
  const result = await sql<CaseTagRow>`
    INSERT INTO case_tags (tenant_id, case_id, tag, created_by)
    SELECT ${tenantId}, ${caseId}, ${tag}, ${createdBy}
    WHERE EXISTS (
      SELECT 1 FROM tag_options WHERE tenant_id = ${tenantId} AND tag = ${tag} AND enabled
    )
    AND (SELECT count(*) FROM case_tags WHERE tenant_id = ${tenantId} AND case_id = ${caseId}) < ${limit}
    ON CONFLICT (case_id, tag) DO NOTHING
    RETURNING tag, created_by, created_at`.execute(db);
  return result.rows[0];
}

/** Removes a case's tag; whether it carried it. */
export async function deleteCaseTag(
  db: Executor,
  tenantId: string,
  caseId: string,
  tag: string,
): Promise<boolean> {
  const result = await db
    .deleteFrom("case_tags")
    .where("tenant_id", "=", tenantId)
    .where("case_id", "=", caseId)
    .where("tag", "=", tag)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

export function upsertTagOption(
  db: Executor,
  tenantId: string,
  tag: string,
  enabled: boolean,
): Promise<TagOptionRow> {
  return db
    .insertInto("tag_options")
    .values({ tenant_id: tenantId, tag, enabled })
    .onConflict((oc) =>
      oc.columns(["tenant_id", "tag"]).doUpdateSet({ enabled, updated_at: sql<Date>`now()` }),
    )
    .returning(["tag", "enabled", "created_at", "updated_at"])
    .executeTakeFirstOrThrow();
}

export function listTagOptions(db: Executor, tenantId: string): Promise<TagOptionRow[]> {
  return findRows(db, "tag_options", { tenant_id: tenantId }, ["tag"]);
}

export async function isTagOptionEnabled(db: Executor, tenantId: string, tag: string): Promise<boolean> {
  return (await findRow(db, "tag_options", { tenant_id: tenantId, tag }))?.enabled === true;
}
