import type { Db, Tx } from "../db/index.js";

// What a job handler is and gets: the claimed job, the claim token for continuations, the errors
// that steer a retry, and the three ways a handler runs (transaction, plain, batch).

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

/**
 * What a plain handler returns when it applied its result in a transaction of its own that
 * deleted its job (`deleteJob`): the worker has nothing left to record, and runs next the
 * continuation that transaction wrote with the claim token, if any.
 */
export interface Applied {
  applied: true;
  next: Continuation | undefined;
}

/**
 * Runs outside a transaction (it talks to the network); completion is recorded after it returns,
 * unless it says its own transaction deleted the job (`Applied`).
 */
export interface PlainJobHandler<P = Record<string, unknown>> extends HandlerBase {
  mode: "plain";
  // biome-ignore lint/suspicious/noConfusingVoidType: most handlers return nothing
  run(job: ClaimedJob<P>, db: Db, claim: ClaimToken): Promise<void | Applied | undefined>;
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
