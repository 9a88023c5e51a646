import type { AppContext } from "../../platform/context.js";
import type { Executor, Tx } from "../../platform/db/index.js";
import type { Continuation, JobSpec } from "../../platform/jobs.js";
import { decisionLatency } from "../../platform/metrics.js";
import type { CaseRow } from "../cases/index.js";
import { caseFailedEvent, type ResultEnvelope } from "../cases/index.js";
import { eventsWrite, type NewEvent } from "../webhooks/index.js";
import type { CompiledWorkflow, NodeTypes } from "../workflows/index.js";
import {
  type CompiledNode,
  type ExpressionVariables,
  getCompiledWorkflow,
  type NodeCase,
  type NodeType,
} from "../workflows/index.js";
import { type CaseState, type CaseWrite, type NewStep, writeSteps } from "./engine.repo.js";

/** What a step plans before it writes: its step rows, the case's new state, its events, and the helpers every path of the engine plans with. */
/** A case's workflow version, compiled; a missing one is an internal inconsistency. */
export async function workflowOf(types: NodeTypes, tx: Executor, row: CaseRow): Promise<CompiledWorkflow> {
  const wf = await getCompiledWorkflow(types, tx, row.tenant_id, row.workflow_id, row.workflow_version);
  if (!wf) {
    throw new Error(
      `workflow ${row.workflow_id} version ${row.workflow_version} of case ${row.id} is missing`,
    );
  }
  return wf;
}

export function nodeOf(wf: CompiledWorkflow, nodeId: string): { node: CompiledNode; type: NodeType } {
  const node = wf.nodes.get(nodeId);
  if (!node) throw new Error(`node ${nodeId} is not in workflow ${wf.workflowId} v${wf.version}`);
  return { node, type: wf.nodeTypes.require(node.type) };
}

export function stateOf(row: CaseRow): CaseState {
  return {
    status: row.status,
    stepSeq: row.step_seq,
    currentNodeId: row.current_node_id,
    nodeOutputs: row.node_outputs,
    decision: row.decision,
    decisionHistory: row.decision_history,
    workflowResult: row.workflow_result,
    error: row.error,
  };
}

export function nodeCaseOf(row: CaseRow): NodeCase {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    type: row.type,
    externalCustomerId: row.external_customer_id,
    dryRun: row.dry_run,
    subject: row.subject,
    time: row.event_timestamp ?? row.created_at,
    createdAt: row.created_at,
  };
}

export function variablesOf(
  row: CaseRow,
  attributes: Record<string, unknown>,
  nodes: Record<string, unknown>,
): ExpressionVariables {
  return {
    payload: row.payload,
    subject: row.subject,
    metadata: row.metadata,
    case: { id: row.id, type: row.type, externalCustomerId: row.external_customer_id },
    customer: { attributes },
    nodes,
  };
}

/** What one step (or a resumption) writes for one case, with its events. */
export interface Planned {
  write: CaseWrite;
  events: NewEvent[];
  /** A follow-up job written claimed by this worker, to run right after the commit. */
  continuation?: JobSpec<unknown>;
  /** The case as it was locked: what the decision latency metric is measured from. */
  kase: { createdAt: Date; dryRun: boolean };
}

export function emptyPlan(row: CaseRow): Planned {
  return {
    write: {
      tenantId: row.tenant_id,
      caseId: row.id,
      inserts: [],
      completes: [],
      state: stateOf(row),
      jobs: [],
      waits: [],
    },
    events: [],
    kase: { createdAt: row.created_at, dryRun: row.dry_run },
  };
}

/** The case fails: it keeps the error, `case.failed` goes out, and a warning names case and node. */
export function failCase(
  ctx: AppContext,
  row: CaseRow,
  plan: Planned,
  nodeId: string,
  message: string,
): void {
  const at = new Date();
  const error = { nodeId, message, at: at.toISOString() };
  plan.write.state = { ...plan.write.state, status: "failed", currentNodeId: null, error };
  plan.events.push(caseFailedEvent(row, { nodeId, message }, at));
  // The message can quote an expression; the case and node are enough to find it.
  ctx.log.warn({ caseId: row.id, tenantId: row.tenant_id, nodeId }, "case failed");
}

/** Writes planned steps and their events; returns the continuations written claimed. */
export async function commit(
  tx: Tx,
  planned: Planned[],
  options: { last?: boolean } = {},
): Promise<Continuation[]> {
  // The steps, the cases' states and their events in one statement: one round trip a batch.
  // (Every planned case has a write, so there are no events without writes.)
  const events = planned.flatMap((p) => p.events);
  const write = events.length > 0 ? eventsWrite(tx, events) : undefined;
  let written: Awaited<ReturnType<typeof writeSteps>>;
  try {
    written = await writeSteps(
      tx,
      planned.map((p) => p.write),
      write && { ctes: write.ctes, column: write.handed },
      options,
    );
  } catch (err) {
    write?.failed();
    throw err;
  }
  write?.done(written.also);
  const ids = written.jobs;
  observeDecisions(planned);
  const continuations: Continuation[] = [];
  for (const p of planned) {
    const job = p.continuation;
    const id = job?.jobKey === undefined ? undefined : ids.get(job.jobKey);
    if (job && id !== undefined) {
      continuations.push({
        id,
        kind: job.kind,
        payload: job.payload as Record<string, unknown>,
        jobKey: job.jobKey ?? null,
        maxAttempts: job.maxAttempts ?? 25,
      });
    }
  }
  return continuations;
}

/** Submission-to-decision latency, for every path a case decides by (starter, step, resume). */
function observeDecisions(planned: Planned[]): void {
  for (const { events, kase } of planned) {
    if (kase.dryRun) continue;
    for (const event of events) {
      if (event.type !== "case.decided" && event.type !== "case.pending_review") continue;
      const decision = (event.payload.result as ResultEnvelope | undefined)?.decision?.value;
      if (decision) decisionLatency.observe({ decision }, (Date.now() - kase.createdAt.getTime()) / 1000);
    }
  }
}

/**
 * A step row, built here for every path that records one (a chain's node, a resumed wait, a
 * stranded case): completed with the node's output and facts, or failed with its message.
 */
export function stepRecord(
  row: CaseRow,
  at: { seq: number; nodeId: string; nodeType: string; startedAt: Date; finishedAt?: Date },
  outcome: { output?: unknown; explain?: Record<string, unknown> } | { failed: string },
): NewStep {
  const failed = "failed" in outcome;
  return {
    tenantId: row.tenant_id,
    caseId: row.id,
    seq: at.seq,
    nodeId: at.nodeId,
    nodeType: at.nodeType,
    status: failed ? "failed" : "completed",
    output: failed ? null : (outcome.output ?? null),
    nextNodeId: null,
    error: failed ? { message: outcome.failed } : null,
    explain: failed ? null : (outcome.explain ?? null),
    startedAt: at.startedAt,
    finishedAt: at.finishedAt ?? new Date(),
  };
}
