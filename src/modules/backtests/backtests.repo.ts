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

/** Cases of the window read per statement while choosing: each statement short, the pauses between. */
export const CHOOSE_CHUNK = 1000;

/** Where a chunk of the window ended: its last case's time (as PostgreSQL prints it, to the microsecond) and id. */
interface WindowKey {
  at: string;
  id: string;
}

/**
 * The next chunk of the backtest's window after `after`, in the order of the cases' times (then
 * ids): how many cases it holds and where it ends. With `pick`, it also chooses the chunk's cases
 * the sample takes (`w.rn` is a case's rank in the whole window), numbered from `pick.ordinal + 1`.
 */
async function windowChunk(
  tx: Executor,
  b: BacktestRow,
  after: { key: WindowKey | null; scanned: number },
  limit: number,
  pick?: { ordinal: number; sample: number | null; n: number },
): Promise<{ scanned: number; chosen: number; last: WindowKey | null }> {
  const cases = casesOfWorkflow(tx, b.tenant_id, {
    workflowId: b.workflow_id,
    from: b.window_from,
    to: b.window_to,
    ...(b.case_type === null ? {} : { caseType: b.case_type }),
  });
  const key = after.key;
  const chosen = pick
    ? sql`(
        INSERT INTO backtest_cases (backtest_id, ordinal, tenant_id, case_id)
        SELECT ${b.id}::uuid, ${pick.ordinal}::int + row_number() OVER (ORDER BY w.rn), ${b.tenant_id}::uuid, w.id
        FROM w
        WHERE ${pick.sample}::bigint IS NULL
           OR (w.rn * ${pick.sample}::bigint) / ${pick.n}::bigint > ((w.rn - 1) * ${pick.sample}::bigint) / ${pick.n}::bigint
        RETURNING 1)`
    : sql`(SELECT 1 WHERE false)`;
  const { rows } = await sql<{
    scanned: string;
    chosen: string;
    last_at: string | null;
    last_id: string | null;
  }>`
    WITH w AS (
      SELECT c.id, c.created_at, ${after.scanned}::bigint + row_number() OVER (ORDER BY c.created_at, c.id) AS rn
      FROM (${cases}) c
      WHERE ${key === null ? sql`true` : sql`(c.created_at, c.id) > (${key.at}::timestamptz, ${key.id}::uuid)`}
      ORDER BY c.created_at, c.id
      LIMIT ${limit}
    ), chosen AS ${chosen}
    SELECT (SELECT count(*) FROM w) AS scanned, (SELECT count(*) FROM chosen) AS chosen,
           last.created_at::text AS last_at, last.id AS last_id
    FROM (SELECT 1) one LEFT JOIN (SELECT created_at, id FROM w ORDER BY rn DESC LIMIT 1) last ON true`.execute(
    tx,
  );
  const row = rows[0];
  return {
    scanned: Number(row?.scanned ?? 0),
    chosen: Number(row?.chosen ?? 0),
    last: row?.last_at && row.last_id ? { at: row.last_at, id: row.last_id } : null,
  };
}

/**
 * Chooses the backtest's cases, in the order they were accepted: every case of its workflow in
 * its window, or an even sample of them (each `n / sample`-th). Returns how many. It reads the
 * window `chunk` cases a statement (twice with a sample: first to count them), calling `between`
 * with each statement's duration after it, so that the caller can let live work go first. Run it
 * in one snapshot (`oneSnapshot`): the chunks then take exactly the cases one statement would.
 */
export async function chooseCases(
  tx: Executor,
  b: BacktestRow,
  chunk: number,
  between: (statementMs: number) => Promise<void>,
): Promise<number> {
  const chunks = async (
    step: (after: { key: WindowKey | null; scanned: number }) => ReturnType<typeof windowChunk>,
    each: (c: { scanned: number; chosen: number }) => void,
  ) => {
    let after = { key: null as WindowKey | null, scanned: 0 };
    for (;;) {
      const began = performance.now();
      const c = await step(after);
      each(c);
      if (c.scanned < chunk || c.last === null) return;
      after = { key: c.last, scanned: after.scanned + c.scanned };
      await between(performance.now() - began);
    }
  };
  let n = 0;
  if (b.sample !== null)
    await chunks(
      (after) => windowChunk(tx, b, after, chunk),
      (c) => (n += c.scanned),
    );
  const sample = b.sample !== null && n > b.sample ? b.sample : null;
  let total = 0;
  await chunks(
    (after) => windowChunk(tx, b, after, chunk, { ordinal: total, sample, n: Math.max(n, 1) }),
    (c) => (total += c.chosen),
  );
  // Statistics of the rows just written, so that the batches' updates are planned on them (the
  // first backtests of a database otherwise update by scanning every row of the table each): of
  // the two columns those statements look rows up by, from a sample of 3,000 rows (not 30,000,
  // nor every column's; the JSON results are never looked up).
  await sql`SET LOCAL default_statistics_target = 10`.execute(tx);
  await sql`ANALYZE backtest_cases (backtest_id, ordinal)`.execute(tx);
  return total;
}

/**
 * Makes the transaction read everything from one snapshot, taken at its first statement (call it
 * before any). A statement may then fail with a serialization failure (`isSerializationFailure`):
 * a row it updates or locks was changed by a transaction that committed since.
 */
export async function oneSnapshot(tx: Executor): Promise<void> {
  await sql`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ`.execute(tx);
}

export function isSerializationFailure(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === "40001";
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
