import type { AppContext } from "../../platform/context.js";
import type { Tx } from "../../platform/db/index.js";
import { enqueue, JOBS_CHANNEL } from "../../platform/jobs.js";
import { jobRuns } from "../../platform/metrics.js";
import { getAttributesOf } from "../attributes/index.js";
import {
  type CaseRow,
  claimReceivedCases,
  hasReceivedCaseToRunAgain,
  lockClaimedCases,
  releaseClaimedCases,
  START_NOTIFICATION,
  type StartClaim,
  type StartTaker,
  updateCase,
} from "../cases/index.js";
import { runChain } from "./chain.js";
import { commit, type Planned, workflowOf } from "./plan.js";
import { failStrandedCase } from "./resume.js";
import { stepJob } from "./step-jobs.js";

/** New cases one starter transaction runs at most. */
export const START_BATCH = 64;
/** How long a lane other than the first sleeps when idle and no case is inserted. */
const IDLE_LANE_MS = 30_000;
/** How often the first lane looks for a case whose run began and never finished. */
const AGAIN_CHECK_MS = 1_000;
/**
 * New cases of this process's API that wait in the starter at most (claimed when inserted):
 * a few batches, so that each runs well within its lease. Past it, cases are left to any starter.
 */
const HANDED_LIMIT = 4 * START_BATCH;
/** The weight of the latest gap between hand-overs in their running mean. */
const GAP_WEIGHT = 0.2;

/**
 * Runs new cases (decision 0011). A starter claims up to START_BATCH `received` cases in one
 * statement that commits (`FOR UPDATE SKIP LOCKED`, a run of each counted, a short lease), then
 * runs them from their start nodes in one transaction, which is their run and their record at
 * once: no job row to insert, lease and delete per case. A crash rolls that transaction back;
 * once the lease runs out the cases are claimed again, and a case claimed again runs alone, so
 * that a case that kills its process fails (after `caseCrashLimit` runs) without taking the
 * others with it. A case that fails to run on its own (an unexpected error) is handed to an
 * `engine.step` job, whose attempts, backoff and final failure (`case.failed`) are the job
 * queue's (decision 0002). The cases its own process's API accepts come to it already claimed,
 * inserted so by the statement that accepts them (decision 0028): no claim statement for them.
 */
export class CaseStarter implements StartTaker {
  readonly #lanes: number;
  #stopped = true;
  #wake: Array<() => void> = [];
  /** A notification came while no lane slept: the next lane to finish its batch looks again. */
  #missed = false;
  #loops: Promise<void>[] = [];
  #unlisten: (() => Promise<void>) | undefined;
  readonly #gate = new Gate();
  #nextAgainCheck = 0;
  /** Cases handed over by this process's API, claimed for this starter, in the order inserted. */
  #handed: StartClaim[] = [];
  /** Room promised to inserts still in flight. */
  #reserved = 0;
  /** When cases were last handed over, the running mean of the gaps, and the lingering batch's timer. */
  #lastTake = Number.NEGATIVE_INFINITY;
  #meanGapMs = Number.POSITIVE_INFINITY;
  #lingering: NodeJS.Timeout | undefined;

  /**
   * How long a handed case waits for others to share its transaction (decision 0031,
   * `CDS_START_LINGER_MS`), when cases come at least twice as often as that on average (over 400
   * a second at 5 ms): in that time two or more others come. Slower, a case starts at once.
   */
  readonly #lingerMs: number;

  constructor(private readonly ctx: AppContext) {
    this.#lingerMs = ctx.config.startLingerMs;
    // Starters spend their time in the database; a few lanes overlap its round trips.
    this.#lanes = Math.max(1, Math.min(4, Math.ceil(ctx.config.workerConcurrency / 8)));
  }

  async start(): Promise<void> {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#unlisten = await this.ctx.db.listen(JOBS_CHANNEL, (kind) => {
      if (kind === "" || kind === START_NOTIFICATION) this.#wakeOne();
    });
    this.#loops = Array.from({ length: this.#lanes }, (_, lane) => this.#run(lane));
    this.ctx.cases.starts.attach(this);
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.ctx.cases.starts.detach(this);
    this.#stopped = true;
    clearTimeout(this.#lingering);
    this.#lingering = undefined;
    this.#wakeAll();
    await Promise.all(this.#loops);
    await this.#unlisten?.();
    // Handed-over cases never begun wait for any starter again, with no run counted.
    await this.#release(this.#handed.splice(0));
  }

  reserve(count: number): number {
    if (this.#stopped) return 0;
    const taken = Math.max(0, Math.min(count, HANDED_LIMIT - this.#handed.length - this.#reserved));
    this.#reserved += taken;
    return taken;
  }

  take(claims: StartClaim[], unused: number): void {
    this.#reserved -= claims.length + unused;
    if (claims.length === 0) return;
    if (this.#stopped) {
      void this.#release(claims);
      return;
    }
    this.#handed.push(...claims);
    const now = performance.now();
    // The gap per case of this hand-over (an insert may carry several), counted up to a second:
    // one quiet spell does not take long to forget.
    const gap = Math.min(now - this.#lastTake, 1000) / claims.length;
    this.#meanGapMs = Number.isFinite(this.#meanGapMs)
      ? this.#meanGapMs + GAP_WEIGHT * (gap - this.#meanGapMs)
      : gap;
    this.#lastTake = now;
    const steady = this.#meanGapMs < this.#lingerMs / 2;
    if (!steady || this.#handed.length >= START_BATCH) {
      clearTimeout(this.#lingering);
      this.#lingering = undefined;
      this.#wakeForHanded();
      return;
    }
    // Cases are coming one after another: this one waits a moment for the next few.
    this.#lingering ??= setTimeout(() => {
      this.#lingering = undefined;
      this.#wakeForHanded();
    }, this.#lingerMs);
  }

  async #release(claims: StartClaim[]): Promise<void> {
    try {
      await releaseClaimedCases(this.ctx.db.root, claims);
    } catch (err) {
      // Their lease runs out instead, and they run again as a case whose run never finished.
      this.ctx.log.warn({ err, cases: claims.length }, "handing back unstarted cases failed");
    }
  }

  #wakeAll(): void {
    for (const wake of this.#wake.splice(0)) wake();
  }

  /**
   * One lane per notification: a few cases inserted wake the lane that slept longest, not every
   * lane (three of four would claim nothing, each in a transaction of its own). Lanes join in as
   * notifications keep coming while others are busy, and all of them when a batch comes back full.
   */
  #wakeOne(): void {
    const wake = this.#wake.shift();
    if (wake) wake();
    else this.#missed = true;
  }

  /** Handed cases need no claim: with no lane asleep, the next lane to finish takes them. */
  #wakeForHanded(): void {
    this.#wake.shift()?.();
  }

  /**
   * One lane. A lane wakes when cases are inserted; the first also polls (CDS_JOB_POLL_MS), should
   * a notification be missed, and the others stay asleep while idle: an idle starter costs one
   * transaction a poll, not one per lane.
   */
  async #run(lane: number): Promise<void> {
    const idleMs = lane === 0 ? this.ctx.config.jobPollMs : IDLE_LANE_MS;
    while (!this.#stopped) {
      let more = false;
      try {
        more = await this.#startBatch(lane);
      } catch (err) {
        this.ctx.log.error({ err }, "starting cases failed");
      }
      if (more) {
        // More are waiting (a backlog): every lane takes its share.
        this.#wakeAll();
        continue;
      }
      if (this.#stopped) continue;
      // Cases handed over while this batch ran: this lane takes them, waking no other for them,
      // unless they are still waiting for company (the timer then wakes a lane).
      if (this.#handed.length > 0 && this.#lingering === undefined) continue;
      if (this.#missed) {
        // Cases were inserted while this batch ran (its claim may not have seen them).
        this.#missed = false;
        continue;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, idleMs);
        this.#wake.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /**
   * Claims cases never run (a statement that commits a run of each, and their lease), then runs
   * them together in one transaction; on failure, each again on its own. The first lane also
   * looks, at most once a second, for a case whose run began and never finished (its process
   * died, perhaps because of the case itself): such a case is claimed and run alone in the
   * process, no other batch running beside it, so that a crash then counts against it alone;
   * past the crash limit it fails instead. True when more cases may be waiting.
   */
  async #startBatch(lane: number): Promise<boolean> {
    if (lane === 0 && Date.now() >= this.#nextAgainCheck) {
      this.#nextAgainCheck = Date.now() + AGAIN_CHECK_MS;
      if (await hasReceivedCaseToRunAgain(this.ctx.db.root)) {
        const ranAgain = await this.#gate.exclusive(() => this.#startAgain());
        if (ranAgain) return true;
      }
    }
    return this.#gate.shared(() => this.#startFresh());
  }

  /** One case claimed again, run alone (or failed past the crash limit); false when none was. */
  async #startAgain(): Promise<boolean> {
    const [claim] = await claimReceivedCases(this.ctx.db.root, "again", 1, this.ctx.config.jobLeaseSeconds);
    if (!claim) return false;
    // Checked again soon: after a crash there are usually several.
    this.#nextAgainCheck = 0;
    if (claim.start_attempts > this.ctx.config.caseCrashLimit) await this.#failCrashed(claim);
    else await this.#startAlone(claim);
    return true;
  }

  async #startFresh(): Promise<boolean> {
    const handed = this.#handed.splice(0, START_BATCH);
    if (handed.length > 0 && this.#handed.length === 0) {
      // Taken before their wait was up: nothing is left for the timer to start.
      clearTimeout(this.#lingering);
      this.#lingering = undefined;
    }
    const claims =
      handed.length > 0
        ? handed
        : await claimReceivedCases(this.ctx.db.root, "fresh", START_BATCH, this.ctx.config.jobLeaseSeconds);
    if (claims.length === 0) return false;
    this.ctx.cases.starts.noteStarted();
    const started = performance.now();
    // Each case's first run counts as one `engine.start` run, timed as its batch.
    const observe = (outcome: "done" | "failed") => {
      const seconds = (performance.now() - started) / 1000;
      for (let i = 0; i < claims.length; i++) jobRuns.observe({ kind: "engine.start", outcome }, seconds);
    };
    try {
      await this.ctx.db.transaction(async (tx) => {
        // Cases handed over or claimed come with their rows and run from them, unread and
        // unlocked: the batch's write checks each claim, and a case claimed again meanwhile fails
        // the batch, whose cases then run alone, read and locked.
        const rows = claims.flatMap((c) => (c.row ? [c.row] : []));
        if (rows.length === claims.length) await this.#runCases(tx, rows, true);
        else await this.#runCases(tx, await lockClaimedCases(tx, claims), false);
      });
      observe("done");
    } catch {
      observe("failed");
      for (const claim of claims) await this.#startAlone(claim);
    }
    return claims.length === START_BATCH;
  }

  /** A case whose runs ended their process `caseCrashLimit` times fails (`case.failed`). */
  async #failCrashed(claim: StartClaim): Promise<void> {
    const crashes = claim.start_attempts - 1;
    await this.ctx.db.transaction(async (tx) => {
      const [row] = await lockClaimedCases(tx, [claim]);
      if (!row) return;
      this.ctx.log.warn({ caseId: row.id, tenantId: row.tenant_id, crashes }, "a case crashed its worker");
      await failStrandedCase(
        this.ctx,
        tx,
        { tenantId: row.tenant_id, caseId: row.id },
        `the case's run ended its worker process ${crashes} times without finishing; it is not run again`,
      );
    });
  }

  /**
   * The batch's cases side by side in its transaction: what they read of one kind at once (list
   * lookups, history figures) goes in one statement, not one round trip a case. Every chain ends
   * before the transaction does, failed or not: none may go on querying a connection the
   * transaction gave back.
   */
  async #runCases(tx: Tx, rows: CaseRow[], unlocked: boolean): Promise<void> {
    const started = await Promise.all(
      rows.flatMap((row) => {
        const nodeId = row.current_node_id;
        if (nodeId === null) return [];
        return [workflowOf(this.ctx.nodeTypes, tx, row).then((wf) => ({ row, nodeId, wf }))];
      }),
    );
    if (started.length === 0) return;
    // Only the customers of versions whose expressions name `customer`: often none, and no read.
    const attributes = await getAttributesOf(
      tx,
      started.filter(({ wf }) => wf.readsCustomer).map(({ row }) => row),
    );
    const runs = await Promise.allSettled(
      started.map(({ row, nodeId, wf }) =>
        runChain(this.ctx, tx, row, wf, {
          seq: row.step_seq + 1,
          nodeId,
          attributes: attributes.get(row.id) ?? {},
          claim: undefined,
        }),
      ),
    );
    const planned: Planned[] = [];
    for (const [i, run] of runs.entries()) {
      if (run.status === "rejected") throw run.reason;
      if (unlocked)
        run.value.write.state.startedAs = (started[i] as (typeof started)[number]).row.start_attempts;
      planned.push(run.value);
    }
    // Nothing follows the batch's write: where nothing came before it either (no node read the
    // database), it is the whole transaction, with no BEGIN or COMMIT (decision 0037).
    await commit(tx, planned, { last: true });
  }

  /** A case run alone; if it fails, a step job retries it with backoff. */
  async #startAlone(claim: StartClaim): Promise<void> {
    try {
      await this.ctx.db.transaction(async (tx) => {
        await this.#runCases(tx, await lockClaimedCases(tx, [claim]), false);
      });
    } catch (err) {
      this.ctx.log.warn({ err, caseId: claim.id }, "starting a case failed; its first step will be retried");
      await this.ctx.db.transaction(async (tx) => {
        const [row] = await lockClaimedCases(tx, [claim]);
        if (!row || row.current_node_id === null) return;
        await updateCase(tx, row.tenant_id, row.id, { status: "running" });
        await enqueue(tx, stepJob(row.tenant_id, row.id, row.step_seq + 1, row.current_node_id));
      });
    }
  }
}

/**
 * The lanes of one process: fresh batches run side by side (shared); a case run again runs with
 * nothing else of the starter beside it (exclusive), and lanes wanting to share wait while one
 * waits for that.
 */
class Gate {
  #shared = 0;
  #exclusive = false;
  #exclusiveWaiting = 0;
  #waiters: Array<() => void> = [];

  async shared<T>(run: () => Promise<T>): Promise<T> {
    while (this.#exclusive || this.#exclusiveWaiting > 0) await this.#wait();
    this.#shared++;
    try {
      return await run();
    } finally {
      this.#shared--;
      this.#wakeAll();
    }
  }

  async exclusive<T>(run: () => Promise<T>): Promise<T> {
    this.#exclusiveWaiting++;
    try {
      while (this.#exclusive || this.#shared > 0) await this.#wait();
    } finally {
      this.#exclusiveWaiting--;
    }
    this.#exclusive = true;
    try {
      return await run();
    } finally {
      this.#exclusive = false;
      this.#wakeAll();
    }
  }

  #wait(): Promise<void> {
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  #wakeAll(): void {
    for (const wake of this.#waiters.splice(0)) wake();
  }
}
