import os from "node:os";
import { Batcher } from "../batcher.js";
import { randomBase62 } from "../crypto.js";
import type { Db, Executor } from "../db/index.js";
import type { Log } from "../logger.js";
import { jobRuns } from "../metrics.js";
import {
  type BatchJobHandler,
  type ClaimedJob,
  type ClaimToken,
  type Continuation,
  defaultBackoffMs,
  type JobHandler,
  PermanentJobError,
  type PlainJobHandler,
  RescheduleJob,
  type TransactionalJobHandler,
} from "./handlers.js";
import { LeaseLost, renewLeases } from "./leases.js";
import {
  claimJobs,
  completeJob,
  completeJobs,
  failJob,
  giveBackJobs,
  JOBS_CHANNEL,
  type JobRow,
  msUntilNextDue,
  toClaimedJob,
} from "./queue.js";

// The worker loop: claim what is due, run it in slots, renew the leases of what it holds, wake on
// NOTIFY or poll. The statements it runs are in queue.ts and leases.ts.

export interface WorkerOptions {
  concurrency: number;
  leaseSeconds: number;
  pollMs: number;
  logger: Log;
  workerId?: string;
  /** How long `stop()` waits for running jobs before leaving them to their leases. */
  stopTimeoutMs?: number;
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
    await settleWithin(this.#running.values(), this.options.stopTimeoutMs ?? 10_000);
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
    return claimJobs(this.db.root, this.id, [...this.#handlers.keys()], limit, this.options.leaseSeconds);
  }

  /** Milliseconds until the earliest queued job is due, bounded by the poll interval. */
  async #untilNextDue(): Promise<number> {
    const ms = await msUntilNextDue(this.db.root, [...this.#handlers.keys()]);
    if (ms === null) return this.options.pollMs;
    return Math.min(this.options.pollMs, Math.max(5, ms + 5));
  }

  /** The largest batch of any handler here (1 without batch handlers): claims take that many per slot. */
  get #maxBatch(): number {
    let max = 1;
    for (const h of this.#handlers.values()) if (h.mode === "batch") max = Math.max(max, h.batchSize);
    return max;
  }

  /**
   * Claimed jobs grouped into what one slot runs: a batch of one kind, or a single job. A job run
   * before (it failed, or its worker died holding it) runs alone: a job that kills its process
   * must not spend the attempts of the jobs that happened to share its batch.
   */
  #units(rows: JobRow[]): JobRow[][] {
    const units: JobRow[][] = [];
    const open = new Map<string, JobRow[]>();
    for (const row of rows) {
      const handler = this.#handlers.get(row.kind);
      if (handler?.mode !== "batch" || row.attempts > 1) {
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
    await giveBackJobs(this.db.root, this.id, rows);
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
    return completeJobs(executor, this.id, jobs);
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
      const applied = await handler.run(job, this.db, this.#claimToken);
      observeRuns(row.kind, "done", started, 1);
      // Its own transaction deleted the job: nothing is left to record.
      if (applied) return applied.next;
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
    return completeJob(executor, this.id, job);
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
      failJob(executor, this.id, job, { reschedule, permanent, message, delayMs });
    const giveUp = handler?.onGiveUp;
    if (!giveUp || reschedule || !(permanent || job.attempt >= job.maxAttempts)) {
      await update(this.db.root);
      return;
    }
    await this.db
      .transaction(async (tx) => {
        if (await update(tx)) await giveUp.call(handler, job, message, tx);
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
    renewLeases(this.db.root, this.id, [...this.#held], this.options.leaseSeconds).catch((err) =>
      this.options.logger.warn({ err }, "renewing job leases failed"),
    );
  }
}

function observeRuns(kind: string, outcome: "done" | "failed", started: number, count: number): void {
  const seconds = (performance.now() - started) / 1000;
  for (let i = 0; i < count; i++) jobRuns.observe({ kind, outcome }, seconds);
}

/** Waits until every one of `work` has settled, or `ms` at most: what still runs then is left running. */
export async function settleWithin(work: Iterable<Promise<unknown>>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.allSettled(work),
    new Promise((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
}
