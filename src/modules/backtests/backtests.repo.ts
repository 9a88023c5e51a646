import { sql } from "kysely";
import { type Executor, findRow, type Row, updateRows } from "../../platform/db/index.js";
import { casesOfWorkflow } from "../cases/index.js";
import type { BacktestsTable, StoredSummary } from "./backtests.tables.js";

export type BacktestRow = Row<"backtests">;
export type BacktestCaseRow = Row<"backtest_cases">;

export interface NewBacktest {
  id: string;
  tenantId: string;
  workflowId: string;
  version: number;
  from: Date;
  to: Date;
  caseType: string | null;
  sample: number | null;
  summary: StoredSummary;
}

export async function insertBacktest(db: Executor, b: NewBacktest): Promise<BacktestRow> {
  return db
    .insertInto("backtests")
    .values({
      id: b.id,
      tenant_id: b.tenantId,
      workflow_id: b.workflowId,
      version: b.version,
      window_from: b.from,
      window_to: b.to,
      case_type: b.caseType,
      sample: b.sample,
      status: "running",
      summary: JSON.stringify(b.summary),
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * How many of the tenant's backtests run, counted under a lock of the tenant's backtests held to
 * the end of the transaction, so that two starting together cannot both see room for one.
 */
export async function countRunning(tx: Executor, tenantId: string): Promise<number> {
  await sql`SELECT pg_advisory_xact_lock(hashtext(${`backtests:${tenantId}`}))`.execute(tx);
  const row = await tx
    .selectFrom("backtests")
    .select(sql<string>`count(*)`.as("n"))
    .where("tenant_id", "=", tenantId)
    .where("status", "=", "running")
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export function findBacktest(db: Executor, tenantId: string, id: string): Promise<BacktestRow | undefined> {
  return findRow(db, "backtests", { tenant_id: tenantId, id });
}

/** The backtest, locked for the rest of the transaction. */
export function lockBacktest(db: Executor, tenantId: string, id: string): Promise<BacktestRow | undefined> {
  return db
    .selectFrom("backtests")
    .selectAll()
    .where("tenant_id", "=", tenantId)
    .where("id", "=", id)
    .forUpdate()
    .executeTakeFirst();
}

/** The tenant's latest backtests, newest first. */
export function listBacktests(db: Executor, tenantId: string, limit: number): Promise<BacktestRow[]> {
  return db
    .selectFrom("backtests")
    .selectAll()
    .where("tenant_id", "=", tenantId)
    .orderBy("created_at", "desc")
    .orderBy("id", "desc")
    .limit(limit)
    .execute();
}

/**
 * Chooses the backtest's cases, in the order they were accepted: every case of its workflow in
 * its window, or an even sample of them (each `n / sample`-th). Returns how many.
 */
export async function chooseCases(tx: Executor, b: BacktestRow): Promise<number> {
  const cases = casesOfWorkflow(tx, b.tenant_id, {
    workflowId: b.workflow_id,
    from: b.window_from,
    to: b.window_to,
    ...(b.case_type === null ? {} : { caseType: b.case_type }),
  });
  const result = await sql`
    INSERT INTO backtest_cases (backtest_id, ordinal, tenant_id, case_id)
    SELECT ${b.id}::uuid, row_number() OVER (ORDER BY w.created_at, w.id), ${b.tenant_id}::uuid, w.id
    FROM (
      SELECT c.id, c.created_at,
             row_number() OVER (ORDER BY c.created_at, c.id) AS rn, count(*) OVER () AS n
      FROM (${cases}) c
    ) w
    WHERE ${b.sample}::int IS NULL OR w.n <= ${b.sample}::int
       OR (w.rn * ${b.sample}::int) / w.n > ((w.rn - 1) * ${b.sample}::int) / w.n`.execute(tx);
  // Statistics of the rows just written, so that the batches' updates are planned on them: the
  // first backtests of a database otherwise update by scanning every row of the table each.
  await sql`ANALYZE backtest_cases`.execute(tx);
  return Number(result.numAffectedRows ?? 0n);
}

/** The next cases not yet replayed after an ordinal, in order. */
export function pendingCases(
  db: Executor,
  backtestId: string,
  after: number,
  limit: number,
): Promise<Array<{ ordinal: number; case_id: string }>> {
  return db
    .selectFrom("backtest_cases")
    .select(["ordinal", "case_id"])
    .where("backtest_id", "=", backtestId)
    .where("ordinal", ">", after)
    .where("after", "is", null)
    .orderBy("ordinal")
    .limit(limit)
    .execute();
}

export interface CaseResult {
  ordinal: number;
  changed: boolean;
  before: Record<string, unknown>;
  after: Record<string, unknown>;
}

/** Records results of cases not yet replayed; returns the ordinals it recorded (none twice). */
export async function recordResults(
  tx: Executor,
  backtestId: string,
  results: CaseResult[],
): Promise<Set<number>> {
  if (results.length === 0) return new Set();
  const values = sql.join(
    results.map(
      (r) =>
        sql`(${r.ordinal}::int, ${r.changed}::boolean, ${JSON.stringify(r.before)}::jsonb, ${JSON.stringify(r.after)}::jsonb)`,
    ),
  );
  const { rows } = await sql<{ ordinal: number }>`
    UPDATE backtest_cases c
    SET changed = v.changed, before = v.before, after = v.after
    FROM (VALUES ${values}) AS v(ordinal, changed, before, after)
    WHERE c.backtest_id = ${backtestId}::uuid AND c.ordinal = v.ordinal AND c.after IS NULL
    RETURNING c.ordinal`.execute(tx);
  return new Set(rows.map((r) => r.ordinal));
}

export function updateBacktest(
  db: Executor,
  tenantId: string,
  id: string,
  patch: {
    status?: BacktestsTable["status"];
    total?: number;
    done?: number;
    summary?: StoredSummary;
    error?: string;
    finished?: true;
  },
): Promise<number> {
  return updateRows(
    db,
    "backtests",
    { tenant_id: tenantId, id },
    {
      ...(patch.status === undefined ? {} : { status: patch.status }),
      ...(patch.total === undefined ? {} : { total: patch.total }),
      ...(patch.done === undefined ? {} : { done: patch.done }),
      ...(patch.summary === undefined ? {} : { summary: JSON.stringify(patch.summary) }),
      ...(patch.error === undefined ? {} : { error: patch.error }),
      ...(patch.finished ? { finished_at: sql<Date>`now()` } : {}),
    },
  );
}

/** A page of a backtest's replayed cases in order, after an ordinal; only changed ones if asked. */
export function casesPage(
  db: Executor,
  tenantId: string,
  backtestId: string,
  page: { changed?: boolean; after: number; limit: number },
): Promise<BacktestCaseRow[]> {
  let query = db
    .selectFrom("backtest_cases")
    .selectAll()
    .where("backtest_id", "=", backtestId)
    .where("tenant_id", "=", tenantId)
    .where("ordinal", ">", page.after)
    .where("after", "is not", null);
  if (page.changed !== undefined) query = query.where("changed", "=", page.changed);
  return query.orderBy("ordinal").limit(page.limit).execute();
}
