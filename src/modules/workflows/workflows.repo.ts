import { type RawBuilder, sql } from "kysely";
import { type Executor, updateRows } from "../../platform/db/index.js";

export interface WorkflowRow {
  workflow_id: string;
  current_version: number | null;
}

export interface VersionSummaryRow {
  workflow_id: string;
  version: number;
  created_at: Date;
  published_at: Date | null;
}

export interface VersionRow extends VersionSummaryRow {
  definition: unknown;
  current: boolean;
}

/**
 * Takes the workflow's next version number, creating the workflow on its first version. The
 * row stays locked until the caller's transaction ends, so concurrent creations are numbered
 * one after the other, and a creation that rolls back gives its number back.
 */
export async function takeNextVersion(tx: Executor, tenantId: string, workflowId: string): Promise<number> {
  const result = await sql<{ latest_version: number }>`
    INSERT INTO workflows (tenant_id, workflow_id, latest_version)
    VALUES (${tenantId}, ${workflowId}, 1)
    ON CONFLICT (tenant_id, workflow_id)
    DO UPDATE SET latest_version = workflows.latest_version + 1, updated_at = now()
    RETURNING latest_version`.execute(tx);
  return (result.rows[0] as { latest_version: number }).latest_version;
}

export function insertVersion(
  tx: Executor,
  tenantId: string,
  workflowId: string,
  version: number,
  definition: unknown,
): Promise<{ created_at: Date }> {
  return tx
    .insertInto("workflow_versions")
    .values({
      tenant_id: tenantId,
      workflow_id: workflowId,
      version,
      definition: JSON.stringify(definition),
    })
    .returning(["created_at"])
    .executeTakeFirstOrThrow();
}

/** Marks the version published (keeping the first publication time); undefined when it does not exist. */
export async function markPublished(
  tx: Executor,
  tenantId: string,
  workflowId: string,
  version: number,
): Promise<Date | undefined> {
  const row = await tx
    .updateTable("workflow_versions")
    .set({ published_at: sql<Date>`coalesce(published_at, now())` })
    .where("tenant_id", "=", tenantId)
    .where("workflow_id", "=", workflowId)
    .where("version", "=", version)
    .returning(["published_at"])
    .executeTakeFirst();
  return row?.published_at ?? undefined;
}

export async function setCurrentVersion(
  tx: Executor,
  tenantId: string,
  workflowId: string,
  version: number,
): Promise<void> {
  const key = { tenant_id: tenantId, workflow_id: workflowId };
  await updateRows(tx, "workflows", key, { current_version: version, updated_at: sql<Date>`now()` });
}

export function listWorkflows(db: Executor, tenantId: string): Promise<WorkflowRow[]> {
  return db
    .selectFrom("workflows")
    .select(["workflow_id", "current_version"])
    .where("tenant_id", "=", tenantId)
    .orderBy("workflow_id")
    .execute();
}

/** Every version of every workflow of the tenant, without definitions, oldest first. */
export function listVersions(db: Executor, tenantId: string): Promise<VersionSummaryRow[]> {
  return db
    .selectFrom("workflow_versions")
    .select(["workflow_id", "version", "created_at", "published_at"])
    .where("tenant_id", "=", tenantId)
    .orderBy("workflow_id")
    .orderBy("version")
    .execute();
}

export function findVersion(
  db: Executor,
  tenantId: string,
  workflowId: string,
  version: number,
): Promise<VersionRow | undefined> {
  return db
    .selectFrom("workflow_versions as v")
    .innerJoin("workflows as w", (join) =>
      join.onRef("w.tenant_id", "=", "v.tenant_id").onRef("w.workflow_id", "=", "v.workflow_id"),
    )
    .select([
      "v.workflow_id",
      "v.version",
      "v.created_at",
      "v.published_at",
      "v.definition",
      sql<boolean>`w.current_version IS NOT DISTINCT FROM v.version`.as("current"),
    ])
    .where("v.tenant_id", "=", tenantId)
    .where("v.workflow_id", "=", workflowId)
    .where("v.version", "=", version)
    .executeTakeFirst();
}

export interface SubmissionTarget {
  currentVersion: number | null;
  /** The version asked for (or the current one), with whether it exists and is published. */
  version: number | null;
  exists: boolean;
  published: boolean;
}

/**
 * What a submission to the workflow would run on: the pinned version, or the current one. One
 * query without the definition, which a process usually has compiled already.
 */
export interface SubmissionTargetKey {
  tenantId: string;
  workflowId: string;
  version: number | undefined;
}

/**
 * For each key, in order: the workflow's current version and the version asked for (or the
 * current one), or undefined for an unknown workflow. One statement for many keys, so that the
 * submissions of concurrent requests share it.
 */
export async function findSubmissionTargets(
  db: Executor,
  keys: SubmissionTargetKey[],
): Promise<Array<SubmissionTarget | undefined>> {
  if (keys.length === 0) return [];
  const values = sql.join(
    keys.map(
      (k, i) => sql`(${i}::int, ${k.tenantId}::uuid, ${k.workflowId}::text, ${k.version ?? null}::int)`,
    ),
  );
  const result = await sql<{
    i: number;
    found: boolean;
    current_version: number | null;
    version: number | null;
    published: boolean | null;
  }>`
    SELECT q.i, w.workflow_id IS NOT NULL AS found, w.current_version, v.version,
           v.published_at IS NOT NULL AS published
    FROM (VALUES ${values}) AS q(i, tenant_id, workflow_id, version)
    LEFT JOIN workflows w ON w.tenant_id = q.tenant_id AND w.workflow_id = q.workflow_id
    LEFT JOIN workflow_versions v
      ON v.tenant_id = w.tenant_id AND v.workflow_id = w.workflow_id
      AND v.version = coalesce(q.version, w.current_version)`.execute(db);
  const targets: Array<SubmissionTarget | undefined> = keys.map(() => undefined);
  for (const row of result.rows) {
    if (!row.found) continue;
    targets[row.i] = {
      currentVersion: row.current_version,
      version: row.version,
      exists: row.version !== null,
      published: row.published === true,
    };
  }
  return targets;
}

/**
 * Whether a version is its workflow's current one, as a condition for another module's statement
 * (the cases' insert confirms the version it took as current, decision 0028).
 */
export function isCurrentVersion(
  tenantId: RawBuilder<unknown> | ReturnType<typeof sql.ref>,
  workflowId: RawBuilder<unknown> | ReturnType<typeof sql.ref>,
  version: RawBuilder<unknown> | ReturnType<typeof sql.ref>,
): RawBuilder<boolean> {
  return sql<boolean>`EXISTS (
    SELECT 1 FROM workflows w
    WHERE w.tenant_id = ${tenantId} AND w.workflow_id = ${workflowId} AND w.current_version = ${version})`;
}
