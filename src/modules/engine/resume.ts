import type { AppContext } from "../../platform/context.js";
import type { Tx } from "../../platform/db/index.js";
import { type CaseStatus, isInFlight } from "../case-model/index.js";
import { lockCase } from "../cases/index.js";
import { emitEvents } from "../webhooks/index.js";
import type { OpenWait, WaitResolution } from "../workflows/index.js";
import {
  findWait,
  resolveOpenWaitsOfCase,
  resolveWait,
  type WaitLookup,
  type WaitRow,
} from "./engine.repo.js";
import { commit, emptyPlan, failCase, nodeOf, type Planned, stepRecord, workflowOf } from "./plan.js";
import { stepJob } from "./step-jobs.js";

/** The resolution the engine itself reports when a wait that times out reaches its expiry. */
export const TIMEOUT = "timeout";

export type ResumeResult =
  /** The wait is resolved and the workflow goes on (or the case failed, when the node had no path). */
  | { status: "resumed"; wait: WaitRow; outcome: "continued" | "failed" }
  /** The node stays paused (its node type said so); the wait is still open. */
  | { status: "kept_waiting"; wait: WaitRow }
  | { status: "no_case" }
  | { status: "no_wait" }
  /** Resolved before: `wait.resolution` says how (`timeout`, `closed`, what its node type reported). */
  | { status: "resolved"; wait: WaitRow }
  /** The wait is open, but its case no longer runs (it failed). */
  | { status: "case_finished"; wait: WaitRow }
  /** Past its expiry, and the caller refuses late resolutions (`refuseExpired`). */
  | { status: "expired"; wait: WaitRow };

export function openWait(wait: WaitRow): OpenWait {
  return { id: wait.id, kind: wait.kind, ref: wait.ref, expiresAt: wait.expires_at, data: wait.data };
}

/**
 * Resolves a wait and resumes its case: the one way a paused node goes on, whatever resolved it
 * (a callback, a timeout, an information request answered, cancelled or expired, a vendor's
 * result). In the caller's transaction: the case lock is taken first, so of two resolutions
 * racing for one wait (a callback and its timeout) exactly one wins, and the other finds it
 * resolved. The paused node's type decides where the workflow goes (`resume`); its step is
 * completed with the output, and the next node's step job is written in the same transaction.
 */
export async function resumeWait(
  ctx: AppContext,
  tx: Tx,
  lookup: WaitLookup,
  resolution: WaitResolution,
  options: { refuseExpired?: boolean } = {},
): Promise<ResumeResult> {
  const row = await lockCase(tx, lookup.tenantId, lookup.caseId);
  if (!row) return { status: "no_case" };
  const wait = await findWait(tx, lookup);
  if (!wait) return { status: "no_wait" };
  if (wait.resolved_at) return { status: "resolved", wait };
  if (!isInFlight(row.status as CaseStatus)) return { status: "case_finished", wait };
  if (options.refuseExpired && wait.expires_at && wait.expires_at.getTime() <= Date.now()) {
    return { status: "expired", wait };
  }
  const wf = await workflowOf(ctx.nodeTypes, tx, row);
  const { node, type } = nodeOf(wf, wait.node_id);
  if (!type.resume) throw new Error(`node type ${node.type} opened wait ${wait.id} but cannot resume`);
  const outcome = type.resume(node, resolution, openWait(wait));
  if (outcome.kind === "keep_waiting") {
    await emitEvents(
      tx,
      (outcome.events ?? []).map((e) => ({ ...e, dryRun: row.dry_run })),
    );
    return { status: "kept_waiting", wait };
  }
  await resolveWait(tx, row.tenant_id, wait.id, resolution.kind);
  const plan = emptyPlan(row);
  const step = stepRecord(
    row,
    { seq: wait.seq, nodeId: wait.node_id, nodeType: node.type, startedAt: wait.created_at },
    outcome,
  );
  plan.write.completes.push(step);
  plan.write.state = { ...plan.write.state, stepSeq: wait.seq };
  if (outcome.kind === "fail") {
    step.status = "failed";
    step.error = { message: outcome.message };
    failCase(ctx, row, plan, wait.node_id, outcome.message);
  } else {
    step.nextNodeId = outcome.next;
    plan.write.state = {
      ...plan.write.state,
      status: "running",
      currentNodeId: outcome.next,
      nodeOutputs: { ...row.node_outputs, [wait.node_id]: outcome.output },
    };
    plan.write.jobs.push(stepJob(row.tenant_id, row.id, wait.seq + 1, outcome.next));
  }
  await commit(tx, [plan]);
  return { status: "resumed", wait, outcome: outcome.kind === "fail" ? "failed" : "continued" };
}

/**
 * A case whose step could not be completed however often it was tried (an internal error, a
 * worker that died on it every time) fails, so that no accepted case is left without an
 * outcome: the step at fault is recorded failed, open waits end, `case.failed` goes out.
 * Called in the transaction that marks the job failed for good.
 */
export async function failStrandedCase(
  ctx: AppContext,
  tx: Tx,
  target: { tenantId: string; caseId: string; nodeId?: string },
  message: string,
): Promise<void> {
  const row = await lockCase(tx, target.tenantId, target.caseId);
  if (!row || !isInFlight(row.status as CaseStatus)) return;
  const nodeId = target.nodeId ?? row.current_node_id ?? "unknown";
  const plan: Planned = emptyPlan(row);
  const now = new Date();
  // The workflow may be what is wrong with the case: the step is recorded without it then.
  const nodeType =
    (await workflowOf(ctx.nodeTypes, tx, row).catch(() => undefined))?.nodes.get(nodeId)?.type ?? "unknown";
  // A waiting case completes the step it waits in; any other gets a step of its own.
  const waiting = row.status === "waiting";
  const seq = waiting ? row.step_seq : row.step_seq + 1;
  const step = stepRecord(
    row,
    { seq, nodeId, nodeType, startedAt: now, finishedAt: now },
    { failed: message },
  );
  if (waiting) {
    await resolveOpenWaitsOfCase(tx, row.tenant_id, row.id, "failed");
    plan.write.completes.push(step);
  } else {
    plan.write.inserts.push(step);
    plan.write.state = { ...plan.write.state, stepSeq: seq };
  }
  failCase(ctx, row, plan, nodeId, message);
  await commit(tx, [plan]);
}
