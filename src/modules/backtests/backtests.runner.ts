import type { BackgroundWorker } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { type ClaimedJob, type JobHandler, JobWorker, type WorkerOptions } from "../../platform/jobs.js";
import { casesWaitingToStart, findCases } from "../cases/index.js";
import { type Replayed, replayCases } from "../engine/index.js";
import { getCompiledWorkflow } from "../workflows/index.js";
import {
  type CaseResult,
  CHOOSE_CHUNK,
  chooseCases,
  findBacktest,
  isSerializationFailure,
  lockBacktest,
  oneSnapshot,
  pendingCases,
  recordResults,
  updateBacktest,
} from "./backtests.repo.js";
import { BACKTEST_JOB } from "./backtests.service.js";
import type { StoredSummary } from "./backtests.tables.js";

/** Cases replayed per batch: one read of their records, one short transaction for their results. */
export const BACKTEST_BATCH = 200;
/**
 * While live cases are being started (by this process in the last `withinMs`, or waiting in the
 * database), a backtest runs batches of `batch` cases (shorter bursts for live work to wait
 * behind) and pauses `pauseMs` at a time between them, for at most `maxPauseRatio` times its last
 * batch's duration, so that it still goes on under load.
 */
const GIVE_WAY = { batch: 50, pauseMs: 25, maxPauseRatio: 8, withinMs: 1000 };

interface BacktestPayload {
  tenantId: string;
  backtestId: string;
}

/** The matrix's key of what the workflow did: its decision, `failed`, or `none` (it never decided). */
function beforeKey(r: Replayed): string {
  return r.before.decision ?? "none";
}

/** The matrix's key of what the candidate does: its decision, `failed`, or `needsInput`. */
function afterKey(r: Replayed): string {
  if (r.after.needsInput !== undefined) return "needsInput";
  if (r.after.error !== undefined) return "failed";
  return r.after.decision ?? "none";
}

/** A case's result row: before and after, `changed` when both are known and differ. */
function resultOf(ordinal: number, r: Replayed): CaseResult {
  return {
    ordinal,
    changed: r.after.needsInput === undefined && beforeKey(r) !== afterKey(r),
    before: { ...r.before },
    after: { ...r.after, ...(r.current.length > 0 ? { current: r.current } : {}) },
  };
}

/** The summary with a batch's results added (only results recorded now: none counted twice). */
export function addToSummary(summary: StoredSummary, results: Replayed[]): StoredSummary {
  const s = structuredClone(summary);
  const node = (id: string) => {
    let n = s.nodes[id];
    if (!n) {
      n = { reached: 0, reachedBefore: 0 };
      s.nodes[id] = n;
    }
    return n;
  };
  for (const r of results) {
    const [b, a] = [beforeKey(r), afterKey(r)];
    const row = s.decisions[b] ?? {};
    row[a] = (row[a] ?? 0) + 1;
    s.decisions[b] = row;
    if (a === "needsInput") s.needsInput += 1;
    else if (a === b) s.unchanged += 1;
    else s.changed += 1;
    if (a === "failed") s.errors += 1;
    for (const id of new Set(r.after.path)) node(id).reached += 1;
    for (const id of new Set(r.before.path)) node(id).reachedBefore += 1;
  }
  return s;
}

/** A case the batch named whose row is gone: its result says so. */
function missingCase(caseId: string): Replayed {
  return {
    caseId,
    before: { decision: null, path: [], override: null },
    after: { decision: null, path: [], error: "the case no longer exists" },
    current: [],
  };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Low priority between batches: while live cases are being started (`live`), the backtest waits
 * (at most `GIVE_WAY.maxPauseRatio` times what its last batch took); otherwise it lets the
 * process's other work run, then goes on.
 */
async function giveWay(batchMs: number, live: () => boolean | Promise<boolean>): Promise<boolean> {
  const until = performance.now() + batchMs * GIVE_WAY.maxPauseRatio;
  let seen = false;
  while (performance.now() < until && (await live())) {
    seen = true;
    await sleep(GIVE_WAY.pauseMs);
  }
  await new Promise<void>((resolve) => setImmediate(resolve));
  return seen;
}

/**
 * Live work, for a batch: this process's starter started cases in the last second, or cases wait
 * to start in the database (for any process).
 */
const liveWork = (ctx: AppContext) => async () =>
  ctx.cases.starts.startedWithin(GIVE_WAY.withinMs) || (await casesWaitingToStart(ctx.db.root));

/**
 * Chooses the backtest's cases once (unless a run of its job already did): in chunks, in one
 * snapshot and one transaction holding the backtest's row, so that a crash leaves nothing chosen
 * and two runs cannot both choose. Between chunks it gives way to this process's live cases as
 * batches do (inside the transaction only what this process knows is asked; on the embedded
 * database, where the transaction holds the one session, it does not pause). False when there
 * is nothing to replay.
 */
async function chooseOnce(ctx: AppContext, tenantId: string, backtestId: string): Promise<boolean> {
  const between = async (ms: number) => {
    if (ctx.db.kind === "postgres")
      await giveWay(ms, () => ctx.cases.starts.startedWithin(GIVE_WAY.withinMs));
  };
  for (let attempt = 1; ; attempt++) {
    try {
      return await ctx.db.transaction(async (tx) => {
        await oneSnapshot(tx);
        const locked = await lockBacktest(tx, tenantId, backtestId);
        if (locked?.status !== "running") return false;
        if (locked.total !== null) return true;
        const total = await chooseCases(tx, locked, CHOOSE_CHUNK, between);
        await updateBacktest(tx, tenantId, backtestId, {
          total,
          ...(total === 0 ? { status: "completed", finished: true } : {}),
        });
        return total > 0;
      });
    } catch (err) {
      // Another run of the job (or a cancel) changed the row after this snapshot: read it again.
      if (!isSerializationFailure(err) || attempt >= 3) throw err;
    }
  }
}

/**
 * Runs a backtest (the `backtest.run` job): chooses its cases once, then replays them in
 * batches, each batch's results and summary written in one transaction that skips any case
 * already recorded, so that the job run again after a crash resumes where the last committed
 * batch ended and counts no case twice. Stops at the first batch after a cancel.
 */
export async function runBacktest(ctx: AppContext, payload: BacktestPayload): Promise<void> {
  const { tenantId, backtestId } = payload;
  const db = ctx.db.root;
  const row = await findBacktest(db, tenantId, backtestId);
  if (row?.status !== "running") return;
  const wf = await getCompiledWorkflow(ctx.nodeTypes, db, tenantId, row.workflow_id, row.version);
  if (!wf) {
    await updateBacktest(db, tenantId, backtestId, {
      status: "failed",
      error: `version ${row.version} of workflow ${row.workflow_id} is missing`,
      finished: true,
    });
    return;
  }
  if (row.total === null && !(await chooseOnce(ctx, tenantId, backtestId))) return;
  let after = 0;
  // A batch's results are written while the next batch is read and replayed: the writes of one
  // and the reads and evaluation of the other overlap, in the order of the batches.
  let recording: Promise<boolean> | undefined;
  let liveSeen = false;
  const live = liveWork(ctx);
  for (;;) {
    const began = performance.now();
    const batch = await pendingCases(db, backtestId, after, liveSeen ? GIVE_WAY.batch : BACKTEST_BATCH);
    const last = batch[batch.length - 1];
    if (!last) break;
    after = last.ordinal;
    const rows = new Map(
      (
        await findCases(
          db,
          tenantId,
          batch.map((b) => b.case_id),
        )
      ).map((r) => [r.id, r]),
    );
    const found = batch.flatMap((b) => {
      const r = rows.get(b.case_id);
      return r ? [r] : [];
    });
    const replayed = new Map((await replayCases(ctx, db, wf, found)).map((r) => [r.caseId, r]));
    const results = batch.map((b) => ({
      ordinal: b.ordinal,
      r: replayed.get(b.case_id) ?? missingCase(b.case_id),
    }));
    if (recording && !(await recording)) return;
    recording = ctx.db.transaction(async (tx) => {
      const locked = await lockBacktest(tx, tenantId, backtestId);
      if (locked?.status !== "running") return false;
      const recorded = await recordResults(
        tx,
        backtestId,
        results.map(({ ordinal, r }) => resultOf(ordinal, r)),
      );
      const added = results.filter(({ ordinal }) => recorded.has(ordinal)).map(({ r }) => r);
      const done = locked.done + added.length;
      const finished = done >= (locked.total ?? 0);
      await updateBacktest(tx, tenantId, backtestId, {
        done,
        summary: addToSummary(locked.summary, added),
        ...(finished ? { status: "completed", finished: true } : {}),
      });
      return !finished;
    });
    // Awaited before the next batch is written, or after the last; a failure is thrown there.
    recording.catch(() => {});
    liveSeen = await giveWay(performance.now() - began, live);
  }
  if (recording && !(await recording)) return;
  // Every case was recorded by an earlier run of the job, which died before it could say so.
  await ctx.db.transaction(async (tx) => {
    const locked = await lockBacktest(tx, tenantId, backtestId);
    if (locked?.status === "running")
      await updateBacktest(tx, tenantId, backtestId, { status: "completed", finished: true });
  });
}

/**
 * The backtests' own worker in each worker process: one slot, claiming only backtest jobs, so
 * that a backtest never takes a slot a live case's step needs (contract section 8).
 */
export function backtestWorkers(ctx: AppContext, options: WorkerOptions): BackgroundWorker[] {
  const handler: JobHandler<BacktestPayload> = {
    kind: BACKTEST_JOB,
    mode: "plain",
    run: (job: ClaimedJob<BacktestPayload>) => runBacktest(ctx, job.payload),
    async onGiveUp(job, error, tx) {
      const { tenantId, backtestId } = job.payload as unknown as BacktestPayload;
      const locked = await lockBacktest(tx, tenantId, backtestId);
      if (locked?.status === "running")
        await updateBacktest(tx, tenantId, backtestId, { status: "failed", error, finished: true });
    },
  };
  const { workerId, ...rest } = options;
  return [
    new JobWorker(ctx.db, [handler], {
      ...rest,
      concurrency: 1,
      ...(workerId === undefined ? {} : { workerId: `${workerId}:backtests` }),
    }),
  ];
}
