import os from "node:os";
import { type QueryCreator, sql } from "kysely";
import { Batcher } from "./batcher.js";
import { randomBase62 } from "./crypto.js";
import type { Database, Db, Executor, Tx } from "./db/index.js";
import type { Log } from "./logger.js";
import { jobRuns } from "./metrics.js";

/**
 * Durable jobs in the database. A job is enqueued inside the caller's transaction, so it exists
 * exactly when the change that asked for it committed. Workers in any number of processes claim
 * jobs with `FOR UPDATE SKIP LOCKED`; a claim leases the job by pushing its `run_at` forward, and
 * a worker that dies simply stops renewing, so the job becomes claimable again when the lease
 * runs out. NOTIFY wakes idle workers at once; polling is the fallback.
 */
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

/** What a transactional handler needs to write its follow-up job already claimed by its worker. */
export interface ClaimToken {
  workerId: string;
  leaseSeconds: number;
}

/** A follow-up job written with `claimedBy`, for the worker to run right after the commit. */
export interface Continuation {
  id: number;
  kind: string;
  payload: Record<string, unknown>;
  jobKey: string | null;
  maxAttempts: number;
}

export interface ClaimedJob<P = Record<string, unknown>> {
  id: number;
  kind: string;
  payload: P;
  jobKey: string | null;
  /** 1 on the first run. */
  attempt: number;
  maxAttempts: number;
  createdAt: Date;
}

/** Thrown by a handler to run the job again later without counting the run as a failure. */
export class RescheduleJob extends Error {
  constructor(
    readonly delayMs: number,
    reason = "rescheduled",
  ) {
    super(reason);
    this.name = "RescheduleJob";
  }
}

/** Thrown by a handler for a failure no retry can fix: the job is marked failed at once. */
export class PermanentJobError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "PermanentJobError";
  }
}

interface HandlerBase {
  kind: string;
  /** Delay before the next attempt after `attempt` failed. Default: 1 s doubling, capped at 1 h. */
  backoffMs?: (attempt: number) => number;
  /**
   * Runs in the transaction that marks the job failed for good (its attempts used up, or a
   * permanent error), so that what the job was for gets an outcome even then.
   */
  onGiveUp?(job: ClaimedJob, error: string, tx: Tx): Promise<void>;
}

/**
 * Runs inside a transaction that also deletes the job: its database effects happen exactly once.
 * It may return a continuation it wrote with the given claim token; the worker runs it next.
 */
export interface TransactionalJobHandler<P = Record<string, unknown>> extends HandlerBase {
  mode: "transaction";
  // biome-ignore lint/suspicious/noConfusingVoidType: most handlers return nothing; a continuation is the exception
  run(job: ClaimedJob<P>, tx: Tx, claim: ClaimToken): Promise<void | Continuation | undefined>;
}

/** Runs outside a transaction (it talks to the network); completion is recorded after it returns. */
export interface PlainJobHandler<P = Record<string, unknown>> extends HandlerBase {
  mode: "plain";
  run(job: ClaimedJob<P>, db: Db): Promise<void>;
}

/**
 * Runs up to `batchSize` jobs of its kind together, in one transaction that also deletes them:
 * the same exactly-once guarantee as a transactional handler, with one round trip for what would
 * be one per job. Should the batch fail, each job runs again on its own, so that one bad job
 * fails alone. It may return continuations written with the claim token.
 */
export interface BatchJobHandler<P = Record<string, unknown>> extends HandlerBase {
  mode: "batch";
  batchSize: number;
  run(jobs: ClaimedJob<P>[], tx: Tx, claim: ClaimToken): Promise<Continuation[]>;
}

// biome-ignore lint/suspicious/noExplicitAny: handlers of different payload types share one registry
export type JobHandler<P = any> = TransactionalJobHandler<P> | PlainJobHandler<P> | BatchJobHandler<P>;

export function defaultBackoffMs(attempt: number): number {
  return Math.min(1000 * 2 ** Math.max(0, attempt - 1), 3_600_000);
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

export interface WorkerOptions {
  concurrency: number;
  leaseSeconds: number;
  pollMs: number;
  logger: Log;
  workerId?: string;
  /** How long `stop()` waits for running jobs before leaving them to their leases. */
  stopTimeoutMs?: number;
}

interface JobRow {
  id: number;
  kind: string;
  payload: Record<string, unknown>;
  job_key: string | null;
  attempts: number;
  max_attempts: number;
  created_at: Date;
}

export class JobWorker {
  readonly id: string;
  readonly #handlers: Map<string, JobHandler>;
  /** Busy slots, keyed by the first job each ran (a slot may go on to run continuations). */
  readonly #running = new Map<number, Promise<void>>();
  /** The jobs this worker holds right now, whose leases it renews. */
  readonly #held = new Set<number>();
  /** The loop sleeps because every slot is busy: a finishing job must wake it. */
  #slotStarved = false;
  /** Completions of plain jobs, many in one statement when many finish together. */
  readonly #completions = new Batcher<ClaimedJob, void>(
    async (jobs) => {
      await this.#completeAll(this.db.root, jobs);
      return jobs.map(() => undefined);
    },
    { maxBatch: 128, lanes: 2 },
  );
  #stopped = true;
  #wake: (() => void) | undefined;
  /** Set by a wake-up that came while the loop was not asleep (a NOTIFY during a claim). */
  #wokenAwake = false;
  #loop: Promise<void> | undefined;
  #unlisten: (() => Promise<void>) | undefined;
  #heartbeat: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Db,
    handlers: JobHandler[],
    private readonly options: WorkerOptions,
  ) {
    this.#handlers = new Map(handlers.map((h) => [h.kind, h]));
    this.id = options.workerId ?? `${os.hostname()}:${process.pid}:${randomBase62(6)}`;
  }

  get runningCount(): number {
    return this.#running.size;
  }

  async start(): Promise<void> {
    if (!this.#stopped) return;
    this.#stopped = false;
    // The payload is the kind of the jobs written; an empty one (a reconnect) wakes everyone.
    this.#unlisten = await this.db.listen(JOBS_CHANNEL, (kind) => {
      if (kind === "" || this.#handlers.has(kind)) this.#wakeUp();
    });
    const beat = Math.max(200, (this.options.leaseSeconds * 1000) / 3);
    this.#heartbeat = setInterval(() => this.#renewLeases(), beat);
    this.#heartbeat.unref();
    this.#loop = this.#run();
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#wakeUp();
    await this.#loop;
    await this.#unlisten?.();
    const timeout = this.options.stopTimeoutMs ?? 10_000;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled(this.#running.values()),
      new Promise((resolve) => {
        timer = setTimeout(resolve, timeout);
      }),
    ]);
    clearTimeout(timer);
    // Only now: a job still running while we wait must keep its lease, or another worker runs it too.
    clearInterval(this.#heartbeat);
  }

  #wakeUp(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    if (wake) wake();
    else this.#wokenAwake = true;
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      this.#wokenAwake = false;
      const free = this.options.concurrency - this.#running.size;
      let sleepMs = this.options.pollMs;
      if (free > 0) {
        const limit = free * this.#maxBatch;
        let claimed: JobRow[] = [];
        try {
          claimed = await this.#claim(limit);
        } catch (err) {
          this.options.logger.error({ err }, "claiming jobs failed");
        }
        const units = this.#units(claimed);
        for (const unit of units.slice(0, free)) this.#start(unit);
        const excess = units.slice(free).flat();
        if (excess.length > 0)
          await this.#giveBack(excess).catch((err) =>
            this.options.logger.warn({ err }, "giving jobs back failed"),
          );
        if (claimed.length === limit) continue;
        // Nothing more is due now: sleep until the next job is (a finishing job no longer wakes us).
        sleepMs = await this.#untilNextDue().catch(() => this.options.pollMs);
      }
      if (this.#stopped) break;
      // A job committed while we were claiming may not have been visible to the claim.
      if (this.#wokenAwake) continue;
      this.#slotStarved = this.#running.size >= this.options.concurrency;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, sleepMs);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  async #claim(limit: number): Promise<JobRow[]> {
    const kinds = [...this.#handlers.keys()];
    const result = await sql<JobRow>`
      WITH next AS (
        SELECT id FROM jobs
        WHERE failed_at IS NULL AND run_at <= now() AND kind = ANY(${kinds})
        ORDER BY run_at, id
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED
      )
      UPDATE jobs j
      SET locked_by = ${this.id}, locked_at = now(), attempts = j.attempts + 1,
          run_at = now() + make_interval(secs => ${this.options.leaseSeconds})
      FROM next WHERE j.id = next.id
      RETURNING j.id, j.kind, j.payload, j.job_key, j.attempts, j.max_attempts, j.created_at`.execute(
      this.db.root,
    );
    return result.rows;
  }

  /** Milliseconds until the earliest queued job is due, bounded by the poll interval. */
  async #untilNextDue(): Promise<number> {
    const kinds = [...this.#handlers.keys()];
    const result = await sql<{ ms: number | null }>`
      SELECT (EXTRACT(EPOCH FROM (min(run_at) - now())) * 1000)::int8 AS ms
      FROM jobs WHERE failed_at IS NULL AND kind = ANY(${kinds})`.execute(this.db.root);
    const ms = result.rows[0]?.ms;
    if (ms === null || ms === undefined) return this.options.pollMs;
    return Math.min(this.options.pollMs, Math.max(5, ms + 5));
  }

  /** The largest batch of any handler here (1 without batch handlers): claims take that many per slot. */
  get #maxBatch(): number {
    let max = 1;
    for (const h of this.#handlers.values()) if (h.mode === "batch") max = Math.max(max, h.batchSize);
    return max;
  }

  /** Claimed jobs grouped into what one slot runs: a batch of one kind, or a single job. */
  #units(rows: JobRow[]): JobRow[][] {
    const units: JobRow[][] = [];
    const open = new Map<string, JobRow[]>();
    for (const row of rows) {
      const handler = this.#handlers.get(row.kind);
      if (handler?.mode !== "batch") {
        units.push([row]);
        continue;
      }
      let unit = open.get(row.kind);
      if (!unit || unit.length >= handler.batchSize) {
        unit = [];
        open.set(row.kind, unit);
        units.push(unit);
      }
      unit.push(row);
    }
    return units;
  }

  #start(unit: JobRow[]): void {
    const first = unit[0] as JobRow;
    const done = this.#runSlot(unit)
      .catch((err) =>
        this.options.logger.error({ err, jobId: first.id, kind: first.kind }, "job bookkeeping failed"),
      )
      .finally(() => {
        this.#running.delete(first.id);
        if (this.#slotStarved || this.#stopped) this.#wakeUp();
      });
    this.#running.set(first.id, done);
  }

  /** Runs a claimed unit, then the continuations it hands over, in one slot without claiming. */
  async #runSlot(first: JobRow[]): Promise<void> {
    let unit = first;
    while (unit.length > 0) {
      for (const row of unit) this.#held.add(row.id);
      let next: Continuation[];
      try {
        next = await this.#executeUnit(unit);
      } finally {
        for (const row of unit) this.#held.delete(row.id);
      }
      if (next.length === 0) return;
      if (this.#stopped) {
        await this.#release(next);
        return;
      }
      unit = next.map((c) => ({
        id: c.id,
        kind: c.kind,
        payload: c.payload,
        job_key: c.jobKey,
        attempts: 1,
        max_attempts: c.maxAttempts,
        created_at: new Date(),
      }));
    }
  }

  async #executeUnit(claimed: JobRow[]): Promise<Continuation[]> {
    // A job claimed once more than it may be ran out of attempts on leases that expired (its
    // worker died each time, perhaps because of the job itself): it fails instead of running.
    const unit: JobRow[] = [];
    for (const row of claimed) {
      if (row.attempts <= row.max_attempts) unit.push(row);
      else
        await this.#fail(
          toClaimedJob(row),
          new PermanentJobError(`lease expired on every one of ${row.max_attempts} attempts`),
          this.#handlers.get(row.kind),
        );
    }
    const first = unit[0];
    if (!first) return [];
    const handler = this.#handlers.get(first.kind);
    if (handler?.mode === "batch") return this.#executeBatch(unit, handler);
    const next = await this.#execute(first, handler);
    return next ? [next] : [];
  }

  /** Gives continuations back to the queue, due now, for any worker to claim. */
  async #release(jobs: Continuation[]): Promise<void> {
    await this.#giveBack(jobs.map((j) => ({ id: j.id, kind: j.kind, attempts: 1 })));
  }

  /** Jobs claimed but not to be run here: unclaimed again, the attempt not counted. */
  async #giveBack(rows: Array<Pick<JobRow, "id" | "kind" | "attempts">>): Promise<void> {
    const ids = rows.map((r) => r.id);
    await sql`
      UPDATE jobs SET locked_by = NULL, locked_at = NULL, attempts = attempts - 1, run_at = now()
      WHERE id = ANY(${ids}) AND locked_by = ${this.id}`.execute(this.db.root);
    const kinds = [...new Set(rows.map((r) => r.kind))];
    await sql`SELECT pg_notify(${JOBS_CHANNEL}, kind) FROM unnest(${kinds}::text[]) AS kind`.execute(
      this.db.root,
    );
  }

  async #executeBatch(unit: JobRow[], handler: BatchJobHandler): Promise<Continuation[]> {
    const jobs = unit.map(toClaimedJob);
    const started = performance.now();
    try {
      let ran = 0;
      const next = await this.db.transaction(async (tx) => {
        const held = await this.#completeAll(tx, jobs);
        const mine = jobs.filter((j) => held.has(j.id));
        ran = mine.length;
        return mine.length === 0 ? [] : handler.run(mine, tx, this.#claimToken);
      });
      observeRuns(handler.kind, "done", started, ran);
      return next;
    } catch (err) {
      if (jobs.length === 1) {
        observeRuns(handler.kind, "failed", started, 1);
        await this.#fail(jobs[0] as ClaimedJob, err, handler);
        return [];
      }
      // One bad job must not fail the others: each runs again on its own.
      const next: Continuation[] = [];
      for (const row of unit) next.push(...(await this.#executeBatch([row], handler)));
      return next;
    }
  }

  /** Deletes the jobs this worker still holds at their attempt; returns their ids. */
  async #completeAll(executor: Executor, jobs: ClaimedJob[]): Promise<Set<number>> {
    const result = await sql<{ id: number }>`
      DELETE FROM jobs
      WHERE locked_by = ${this.id}
        AND (id, attempts) IN (
          SELECT * FROM unnest(${jobs.map((j) => j.id)}::int8[], ${jobs.map((j) => j.attempt)}::int[])
        )
      RETURNING id`.execute(executor);
    return new Set(result.rows.map((r) => r.id));
  }

  async #execute(
    row: JobRow,
    handler: TransactionalJobHandler | PlainJobHandler | undefined,
  ): Promise<Continuation | undefined> {
    const job = toClaimedJob(row);
    if (!handler) {
      await this.#fail(job, new RescheduleJob(this.options.pollMs, `no handler for ${row.kind} here`));
      return undefined;
    }
    const started = performance.now();
    try {
      if (handler.mode === "transaction") {
        const next = await this.db.transaction(async (tx) => {
          if (!(await this.#complete(tx, job))) throw new LeaseLost();
          return handler.run(job, tx, this.#claimToken);
        });
        observeRuns(row.kind, "done", started, 1);
        return next ?? undefined;
      }
      await handler.run(job, this.db);
      observeRuns(row.kind, "done", started, 1);
      await this.#completions.add(job);
    } catch (err) {
      if (err instanceof LeaseLost) return undefined;
      observeRuns(row.kind, "failed", started, 1);
      await this.#fail(job, err, handler);
    }
    return undefined;
  }

  get #claimToken(): ClaimToken {
    return { workerId: this.id, leaseSeconds: this.options.leaseSeconds };
  }

  /** Deletes the job if this worker still holds this attempt. */
  async #complete(executor: Executor, job: ClaimedJob): Promise<boolean> {
    const result = await executor
      .deleteFrom("jobs")
      .where("id", "=", job.id)
      .where("locked_by", "=", this.id)
      .where("attempts", "=", job.attempt)
      .executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  async #fail(job: ClaimedJob, err: unknown, handler?: JobHandler): Promise<void> {
    const reschedule = err instanceof RescheduleJob;
    const permanent = err instanceof PermanentJobError;
    const delayMs = reschedule ? err.delayMs : (handler?.backoffMs ?? defaultBackoffMs)(job.attempt);
    const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
    if (!reschedule) {
      this.options.logger.warn(
        { err, jobId: job.id, kind: job.kind, attempt: job.attempt },
        permanent || job.attempt >= job.maxAttempts ? "job failed for good" : "job failed; will retry",
      );
    }
    const update = (executor: Executor) =>
      sql<{ failed: boolean }>`
        UPDATE jobs
        SET locked_by = NULL, locked_at = NULL,
            attempts = attempts - ${reschedule ? 1 : 0},
            last_error = ${reschedule ? null : message.slice(0, 2000)},
            run_at = now() + make_interval(secs => ${delayMs / 1000}),
            failed_at = CASE WHEN ${permanent} OR (${!reschedule} AND attempts >= max_attempts) THEN now() END
        WHERE id = ${job.id} AND locked_by = ${this.id} AND attempts = ${job.attempt}
        RETURNING failed_at IS NOT NULL AS failed`.execute(executor);
    const giveUp = handler?.onGiveUp;
    if (!giveUp || reschedule || !(permanent || job.attempt >= job.maxAttempts)) {
      await update(this.db.root);
      return;
    }
    await this.db
      .transaction(async (tx) => {
        const { rows } = await update(tx);
        if (rows[0]?.failed) await giveUp.call(handler, job, message, tx);
      })
      .catch((hookErr) =>
        this.options.logger.error(
          { err: hookErr, jobId: job.id, kind: job.kind },
          "giving up on a job failed",
        ),
      );
  }

  #renewLeases(): void {
    if (this.#held.size === 0) return;
    const ids = [...this.#held];
    // A transactional job's row is locked by its own open transaction until it ends (and no claim
    // can take a locked row): waiting for that lock would hold back every other renewal here.
    sql`UPDATE jobs SET run_at = now() + make_interval(secs => ${this.options.leaseSeconds})
        WHERE id IN (
          SELECT id FROM jobs WHERE locked_by = ${this.id} AND id = ANY(${ids})
          FOR UPDATE SKIP LOCKED
        )`
      .execute(this.db.root)
      .catch((err) => this.options.logger.warn({ err }, "renewing job leases failed"));
  }
}

class LeaseLost extends Error {}

function observeRuns(kind: string, outcome: "done" | "failed", started: number, count: number): void {
  const seconds = (performance.now() - started) / 1000;
  for (let i = 0; i < count; i++) jobRuns.observe({ kind, outcome }, seconds);
}

function toClaimedJob(row: JobRow): ClaimedJob {
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
