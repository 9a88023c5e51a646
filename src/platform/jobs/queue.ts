import { type QueryCreator, sql } from "kysely";
import type { Database, Executor } from "../db/index.js";
import type { ClaimedJob, ClaimToken } from "./handlers.js";

// The job queue's statements: enqueueing (alone or inside a caller's statement), and what a
// worker does to the rows it claims, completes, gives back or fails. Leases are in leases.ts.

export const JOBS_CHANNEL = "cds_jobs";

export interface JobSpec<P = Record<string, unknown>> {
  kind: string;
  payload: P;
  /** Run no earlier than this; default now. */
  runAt?: Date;
  /** A job with the same key already queued (or running) makes this enqueue a no-op. */
  jobKey?: string;
  maxAttempts?: number;
  /**
   * Written already claimed by this worker (see `ClaimToken`), to be run as the continuation of
   * the job that wrote it: no claim and no NOTIFY. Should the worker die first, the lease runs
   * out and any worker takes it, as for any claimed job.
   */
  claimedBy?: ClaimToken;
}

/**
 * The INSERT of job rows, for `enqueue` and for statements that write jobs beside other rows in
 * one round trip (a `WITH` clause). Callers of the latter must also NOTIFY `JOBS_CHANNEL`.
 */
export function insertJobs(db: QueryCreator<Database>, specs: JobSpec<unknown>[]) {
  // One statement may not touch a key twice (ON CONFLICT DO UPDATE refuses it): the first wins.
  const keys = new Set<string>();
  const unique = specs.filter((s) => {
    if (s.jobKey === undefined) return true;
    if (keys.has(s.jobKey)) return false;
    keys.add(s.jobKey);
    return true;
  });
  const rows = unique.map((s) => ({
    kind: s.kind,
    payload: JSON.stringify(s.payload),
    job_key: s.jobKey ?? null,
    run_at: s.claimedBy
      ? sql<Date>`now() + make_interval(secs => ${s.claimedBy.leaseSeconds})`
      : (s.runAt ?? sql<Date>`now()`),
    max_attempts: s.maxAttempts ?? 25,
    locked_by: s.claimedBy?.workerId ?? null,
    locked_at: s.claimedBy ? sql<Date>`now()` : null,
    attempts: s.claimedBy ? 1 : 0,
  }));
  return (
    db
      .insertInto("jobs")
      // biome-ignore lint/suspicious/noExplicitAny: run_at mixes Date and now() expressions
      .values(rows as any)
      // A queued or running job keeps its key; one that failed for good gives it to the new job.
      .onConflict((oc) =>
        oc
          .column("job_key")
          .doUpdateSet((eb) => ({
            kind: eb.ref("excluded.kind"),
            payload: eb.ref("excluded.payload"),
            run_at: eb.ref("excluded.run_at"),
            max_attempts: eb.ref("excluded.max_attempts"),
            attempts: 0,
            locked_by: null,
            locked_at: null,
            last_error: null,
            failed_at: null,
            created_at: sql<Date>`now()`,
          }))
          .where("jobs.failed_at", "is not", null),
      )
      .returning(["id", "kind", "locked_by"])
  );
}

/**
 * The NOTIFY that wakes workers, to select from the rows a statement inserted into jobs (it reads
 * their `kind`: a worker wakes only for kinds it runs). Rows written claimed need none.
 */
export const notifyJobs = sql<string>`pg_notify(${JOBS_CHANNEL}, kind)`;

/** Enqueues jobs on `executor` (normally the caller's transaction) and wakes idle workers on commit. */
export async function enqueue(executor: Executor, ...specs: JobSpec<unknown>[]): Promise<void> {
  if (specs.length === 0) return;
  await executor
    .with("inserted", (db) => insertJobs(db, specs))
    .selectFrom("inserted")
    .select(notifyJobs.as("notified"))
    .where("locked_by", "is", null)
    .execute();
}

/**
 * Deletes a job in the caller's transaction: a plain handler that applies its result in a
 * transaction of its own deletes its job there, so that a rerun after a crash finds nothing to
 * do. False when the job is gone already.
 */
export async function deleteJob(tx: Executor, id: number): Promise<boolean> {
  const result = await tx.deleteFrom("jobs").where("id", "=", id).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** A claimed row, as the worker's statements read it. */
export interface JobRow {
  id: number;
  kind: string;
  payload: Record<string, unknown>;
  job_key: string | null;
  attempts: number;
  max_attempts: number;
  created_at: Date;
}

/** The claimed row as a handler sees it. */
export function toClaimedJob(row: JobRow): ClaimedJob {
  return {
    id: row.id,
    kind: row.kind,
    payload: row.payload,
    jobKey: row.job_key,
    attempt: row.attempts,
    maxAttempts: row.max_attempts,
    createdAt: row.created_at,
  };
}

/**
 * Claims up to `limit` due jobs of these kinds for a worker: `FOR UPDATE SKIP LOCKED`, then the
 * lease (`run_at` pushed forward by `leaseSeconds`) and the attempt counted, in one statement.
 */
export async function claimJobs(
  db: Executor,
  workerId: string,
  kinds: string[],
  limit: number,
  leaseSeconds: number,
): Promise<JobRow[]> {
  const result = await sql<JobRow>`
    WITH next AS (
      SELECT id FROM jobs
      WHERE failed_at IS NULL AND run_at <= now() AND kind = ANY(${kinds})
      ORDER BY run_at, id
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    )
    UPDATE jobs j
    SET locked_by = ${workerId}, locked_at = now(), attempts = j.attempts + 1,
        run_at = now() + make_interval(secs => ${leaseSeconds})
    FROM next WHERE j.id = next.id
    RETURNING j.id, j.kind, j.payload, j.job_key, j.attempts, j.max_attempts, j.created_at`.execute(db);
  return result.rows;
}

/** Milliseconds until the earliest queued job of these kinds is due; null when there is none. */
export async function msUntilNextDue(db: Executor, kinds: string[]): Promise<number | null> {
  const result = await sql<{ ms: number | null }>`
    SELECT (EXTRACT(EPOCH FROM (min(run_at) - now())) * 1000)::int8 AS ms
    FROM jobs WHERE failed_at IS NULL AND kind = ANY(${kinds})`.execute(db);
  return result.rows[0]?.ms ?? null;
}

/** Jobs a worker claimed but will not run: unclaimed again, due now, the attempt not counted. */
export async function giveBackJobs(
  db: Executor,
  workerId: string,
  rows: Array<Pick<JobRow, "id" | "kind">>,
): Promise<void> {
  const ids = rows.map((r) => r.id);
  await sql`
    UPDATE jobs SET locked_by = NULL, locked_at = NULL, attempts = attempts - 1, run_at = now()
    WHERE id = ANY(${ids}) AND locked_by = ${workerId}`.execute(db);
  const kinds = [...new Set(rows.map((r) => r.kind))];
  await sql`SELECT pg_notify(${JOBS_CHANNEL}, kind) FROM unnest(${kinds}::text[]) AS kind`.execute(db);
}

/** Deletes the jobs a worker still holds at their attempt; returns their ids. */
export async function completeJobs(
  executor: Executor,
  workerId: string,
  jobs: Array<Pick<ClaimedJob, "id" | "attempt">>,
): Promise<Set<number>> {
  const result = await sql<{ id: number }>`
    DELETE FROM jobs
    WHERE locked_by = ${workerId}
      AND (id, attempts) IN (
        SELECT * FROM unnest(${jobs.map((j) => j.id)}::int8[], ${jobs.map((j) => j.attempt)}::int[])
      )
    RETURNING id`.execute(executor);
  return new Set(result.rows.map((r) => r.id));
}

/** Deletes the job if the worker still holds this attempt. */
export async function completeJob(
  executor: Executor,
  workerId: string,
  job: Pick<ClaimedJob, "id" | "attempt">,
): Promise<boolean> {
  const result = await executor
    .deleteFrom("jobs")
    .where("id", "=", job.id)
    .where("locked_by", "=", workerId)
    .where("attempts", "=", job.attempt)
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/**
 * Records a failed attempt of a job the worker holds: due again after `delayMs` (a reschedule
 * does not count the attempt), or failed for good when it is permanent or its attempts are used
 * up. True when it failed for good.
 */
export async function failJob(
  executor: Executor,
  workerId: string,
  job: Pick<ClaimedJob, "id" | "attempt">,
  failure: { reschedule: boolean; permanent: boolean; message: string; delayMs: number },
): Promise<boolean> {
  const { reschedule, permanent, message, delayMs } = failure;
  const { rows } = await sql<{ failed: boolean }>`
    UPDATE jobs
    SET locked_by = NULL, locked_at = NULL,
        attempts = attempts - ${reschedule ? 1 : 0},
        last_error = ${reschedule ? null : message.slice(0, 2000)},
        run_at = now() + make_interval(secs => ${delayMs / 1000}),
        failed_at = CASE WHEN ${permanent} OR (${!reschedule} AND attempts >= max_attempts) THEN now() END
    WHERE id = ${job.id} AND locked_by = ${workerId} AND attempts = ${job.attempt}
    RETURNING failed_at IS NOT NULL AS failed`.execute(executor);
  return rows[0]?.failed === true;
}
