import type { AppContext } from "../../platform/context.js";
import type { Tx } from "../../platform/db/index.js";
import { enqueue, JOBS_CHANNEL } from "../../platform/jobs.js";
import { jobRuns } from "../../platform/metrics.js";
import { getAttributesOf } from "../attributes/index.js";
import {
  type CaseRow,
  claimReceivedCases,
  findCaseTenant,
  lockCase,
  START_NOTIFICATION,
  updateCase,
} from "../cases/index.js";
import { runChain } from "./chain.js";
import { commit, type Planned, workflowOf } from "./plan.js";
import { stepJob } from "./step-jobs.js";

/** New cases one starter transaction runs at most. */
export const START_BATCH = 64;
/** How long a lane other than the first sleeps when idle and no case is inserted. */
const IDLE_LANE_MS = 30_000;

/**
 * Runs new cases (decision 0011). A starter takes up to START_BATCH `received` cases with
 * `FOR UPDATE SKIP LOCKED` and runs each from its start node in that same transaction, which is
 * therefore the case's claim, its run and its record at once: no job row to insert, lease and
 * delete per case. A crash rolls the transaction back and the cases are `received` again for any
 * starter. A case that fails to run on its own (an unexpected error) is handed to an
 * `engine.step` job, whose attempts, backoff and final failure (`case.failed`) are the
 * job queue's (decision 0002).
 */
export class CaseStarter {
  readonly #lanes: number;
  #stopped = true;
  #wake: Array<() => void> = [];
  /** A notification came while no lane slept: the next lane to finish its batch looks again. */
  #missed = false;
  #loops: Promise<void>[] = [];
  #unlisten: (() => Promise<void>) | undefined;

  constructor(private readonly ctx: AppContext) {
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
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#wakeAll();
    await Promise.all(this.#loops);
    await this.#unlisten?.();
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

  /**
   * One lane. A lane wakes when cases are inserted; the first also polls (CDS_JOB_POLL_MS), should
   * a notification be missed, and the others stay asleep while idle: an idle starter costs one
   * transaction a poll, not one per lane.
   */
  async #run(lane: number): Promise<void> {
    const idleMs = lane === 0 ? this.ctx.config.jobPollMs : IDLE_LANE_MS;
    while (!this.#stopped) {
      let started = 0;
      try {
        started = await this.#startBatch();
      } catch (err) {
        this.ctx.log.error({ err }, "starting cases failed");
      }
      if (started === START_BATCH) {
        // More are waiting (a backlog): every lane takes its share.
        this.#wakeAll();
        continue;
      }
      if (this.#stopped) continue;
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

  /** One transaction: claims received cases and runs them; on failure, each again on its own. */
  async #startBatch(): Promise<number> {
    let ids: string[] = [];
    const started = performance.now();
    // Each case's first run counts as one `engine.start` run, timed as its batch.
    const observe = (outcome: "done" | "failed") => {
      const seconds = (performance.now() - started) / 1000;
      for (let i = 0; i < ids.length; i++) jobRuns.observe({ kind: "engine.start", outcome }, seconds);
    };
    try {
      const count = await this.ctx.db.transaction(async (tx) => {
        const rows = await claimReceivedCases(tx, START_BATCH);
        ids = rows.map((r) => r.id);
        await this.#runCases(tx, rows);
        return rows.length;
      });
      observe("done");
      return count;
    } catch (err) {
      observe("failed");
      if (ids.length === 0) throw err;
      for (const row of ids) await this.#startAlone(row);
      return ids.length;
    }
  }

  async #runCases(tx: Tx, rows: CaseRow[]): Promise<void> {
    if (rows.length === 0) return;
    const attributes = await getAttributesOf(tx, rows);
    const planned: Planned[] = [];
    for (const row of rows) {
      if (row.current_node_id === null) continue;
      const wf = await workflowOf(this.ctx.nodeTypes, tx, row);
      planned.push(
        await runChain(this.ctx, tx, row, wf, {
          seq: row.step_seq + 1,
          nodeId: row.current_node_id,
          attributes: attributes.get(row.id) ?? {},
          claim: undefined,
        }),
      );
    }
    await commit(tx, planned);
  }

  /** A case of a failed batch, run alone; if it fails again, a step job retries it with backoff. */
  async #startAlone(caseId: string): Promise<void> {
    try {
      await this.ctx.db.transaction(async (tx) => {
        const row = await lockReceived(tx, caseId);
        if (row) await this.#runCases(tx, [row]);
      });
    } catch (err) {
      this.ctx.log.warn({ err, caseId }, "starting a case failed; its first step will be retried");
      await this.ctx.db.transaction(async (tx) => {
        const row = await lockReceived(tx, caseId);
        if (!row || row.current_node_id === null) return;
        await updateCase(tx, row.tenant_id, row.id, { status: "running" });
        await enqueue(tx, stepJob(row.tenant_id, row.id, row.step_seq + 1, row.current_node_id));
      });
    }
  }
}

async function lockReceived(tx: Tx, caseId: string): Promise<CaseRow | undefined> {
  const tenantId = await findCaseTenant(tx, caseId);
  if (!tenantId) return undefined;
  const locked = await lockCase(tx, tenantId, caseId);
  return locked?.status === "received" ? locked : undefined;
}
