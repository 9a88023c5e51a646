import type { AppContext } from "../../platform/context.js";
import { uuid } from "../../platform/crypto.js";
import type { Executor, Tx } from "../../platform/db/index.js";
import {
  type ClaimedJob,
  type ClaimToken,
  type Continuation,
  deleteJob,
  type JobSpec,
} from "../../platform/jobs.js";
import { decisionLatency } from "../../platform/metrics.js";
import { getAttributesOf } from "../attributes/index.js";
import { type CaseStatus, type DecisionEntry, isInFlight } from "../case-model/index.js";
import { type CaseRow, findCase, lockCase, lockCases } from "../cases/cases.repo.js";
import { emitEvents, type NewEvent } from "../webhooks/index.js";
import type { CompiledWorkflow, NodeTypes } from "../workflows/index.js";
import {
  type CompiledNode,
  ExpressionError,
  type ExpressionVariables,
  getCompiledWorkflow,
  type NodeCase,
  NodeEvaluationError,
  type NodeOutcome,
  type NodeType,
} from "../workflows/index.js";
import { caseFailedEvent, decisionEvent, type ResultEnvelope } from "./engine.events.js";
import { type CaseState, type CaseWrite, type NewStep, writeSteps } from "./engine.repo.js";

/**
 * The workflow engine (decision 0011). A step is a job: `engine.step` runs, in one transaction
 * holding the case lock, the case's nodes one after another for as long as they touch nothing
 * outside the database (rules, score, decision, notify, a node that raises a request or opens
 * a wait), each recorded as its own step row, up to the end, a pause, or a node whose type calls
 * outside the service. Such a node runs as an `engine.call` job: its call first, with no
 * transaction open, then, under the case lock, what it decided and the nodes after it.
 *
 * A worker runs the step jobs it holds in batches, one transaction per batch. A crash anywhere
 * rolls the batch back and its jobs run again; a step that committed is never run twice (its job
 * row is deleted in that same transaction, and a step whose case has moved on is ignored).
 */
export const STEP_JOB = "engine.step";
export const CALL_JOB = "engine.call";
export const WAIT_TIMEOUT_JOB = "engine.wait-timeout";
/** Step jobs one transaction runs at most. */
export const STEP_BATCH = 32;
/** Attempts of a step before its case fails (its error recorded, `case.failed` sent). */
export const STEP_ATTEMPTS = 10;

export interface StepPayload {
  tenantId: string;
  caseId: string;
  seq: number;
  nodeId: string;
}

export function stepJob(tenantId: string, caseId: string, seq: number, nodeId: string, kind = STEP_JOB) {
  return {
    kind,
    payload: { tenantId, caseId, seq, nodeId } satisfies StepPayload,
    jobKey: `step:${caseId}:${seq}`,
    maxAttempts: STEP_ATTEMPTS,
  };
}

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

/** Evaluates a node; an expression that fails, or a value the node cannot use, fails the case. */
async function evaluate(
  type: NodeType,
  node: CompiledNode,
  input: Parameters<NodeType["evaluate"]>[1],
): Promise<NodeOutcome> {
  try {
    return await type.evaluate(node, input);
  } catch (err) {
    if (err instanceof ExpressionError || err instanceof NodeEvaluationError) {
      return { kind: "fail", message: err.message };
    }
    throw err;
  }
}

interface ChainStart {
  seq: number;
  nodeId: string;
  attributes: Record<string, unknown>;
  claim: ClaimToken | undefined;
  /** The result of an external node's call, when the chain starts at that node. */
  called?: { value: unknown };
}

/**
 * Runs the case's nodes from `start` in the step's transaction, each its own step row, until the
 * workflow ends, pauses, fails, or reaches a node that calls outside the service (that node gets
 * a job of its own, run as the continuation of this one when a claim token is given).
 */
export async function runChain(
  ctx: AppContext,
  tx: Tx,
  row: CaseRow,
  wf: CompiledWorkflow,
  start: ChainStart,
): Promise<Planned> {
  const plan = emptyPlan(row);
  const outputs = { ...row.node_outputs };
  const kase = nodeCaseOf(row);
  let seq = start.seq;
  let nodeId = start.nodeId;
  for (;;) {
    const { node, type } = nodeOf(wf, nodeId);
    const first = seq === start.seq;
    if (type.effects === "external" && !(first && start.called)) {
      const job = {
        ...stepJob(row.tenant_id, row.id, seq, nodeId, CALL_JOB),
        ...(start.claim ? { claimedBy: start.claim } : {}),
      };
      plan.write.jobs.push(job);
      if (start.claim) plan.continuation = job;
      plan.write.state = { ...plan.write.state, status: "running", stepSeq: seq - 1, currentNodeId: nodeId };
      return plan;
    }
    const startedAt = new Date();
    const vars = variablesOf(row, start.attributes, outputs);
    const outcome = await evaluate(type, node, {
      ctx,
      tx,
      vars,
      case: kase,
      seq,
      ...(first && start.called ? { called: start.called.value } : {}),
    });
    const step: NewStep = {
      tenantId: row.tenant_id,
      caseId: row.id,
      seq,
      nodeId,
      nodeType: node.type,
      status: "completed",
      output: outcome.output ?? null,
      nextNodeId: null,
      error: null,
      explain: outcome.explain ?? null,
      startedAt,
      finishedAt: new Date(),
    };
    plan.write.inserts.push(step);
    plan.write.state = { ...plan.write.state, stepSeq: seq };
    switch (outcome.kind) {
      case "continue":
        step.nextNodeId = outcome.next;
        outputs[nodeId] = outcome.output;
        plan.events.push(...(outcome.events ?? []));
        plan.write.state = {
          ...plan.write.state,
          status: "running",
          currentNodeId: outcome.next,
          nodeOutputs: outputs,
        };
        seq += 1;
        nodeId = outcome.next;
        continue;
      case "decide": {
        outputs[nodeId] = outcome.output;
        const entry: DecisionEntry = {
          value: outcome.decision,
          source: outcome.source,
          actor: `node:${nodeId}`,
          decidedAt: step.finishedAt?.toISOString() ?? startedAt.toISOString(),
        };
        const result = { decision: entry, decisionHistory: [entry], workflow_result: outcome.result };
        plan.write.state = {
          ...plan.write.state,
          status: outcome.decision === "in_review" ? "in_review" : "decided",
          currentNodeId: null,
          nodeOutputs: outputs,
          decision: entry,
          decisionHistory: [entry],
          workflowResult: outcome.result,
        };
        const type = outcome.decision === "in_review" ? "case.pending_review" : "case.decided";
        plan.events.push(decisionEvent(type, row, result, new Date(entry.decidedAt)));
        return plan;
      }
      case "wait": {
        step.status = "waiting";
        step.finishedAt = null;
        const { wait } = outcome;
        const waitId = wait.id ?? uuid();
        plan.write.waits.push({
          id: waitId,
          tenantId: row.tenant_id,
          caseId: row.id,
          seq,
          nodeId,
          kind: wait.kind,
          ref: wait.ref,
          providerId: wait.providerId ?? null,
          expiresAt: wait.expiresAt,
          data: wait.data ?? null,
        });
        if (wait.timesOut && wait.expiresAt)
          plan.write.jobs.push(waitTimeoutJob(row, waitId, wait.expiresAt));
        plan.events.push(...(outcome.events ?? []));
        plan.write.state = {
          ...plan.write.state,
          status: "waiting",
          currentNodeId: nodeId,
          nodeOutputs: outputs,
        };
        return plan;
      }
      case "fail":
        step.status = "failed";
        step.error = { message: outcome.message };
        failCase(ctx, row, plan, nodeId, outcome.message);
        return plan;
    }
  }
}

export interface WaitTimeoutPayload {
  tenantId: string;
  caseId: string;
  waitId: string;
}

function waitTimeoutJob(row: CaseRow, waitId: string, runAt: Date): JobSpec<WaitTimeoutPayload> {
  return {
    kind: WAIT_TIMEOUT_JOB,
    payload: { tenantId: row.tenant_id, caseId: row.id, waitId },
    runAt,
    jobKey: `wait-timeout:${waitId}`,
  };
}

/** Writes planned steps and their events; returns the continuations written claimed. */
export async function commit(tx: Tx, planned: Planned[]): Promise<Continuation[]> {
  const ids = await writeSteps(
    tx,
    planned.map((p) => p.write),
  );
  await emitEvents(
    tx,
    planned.flatMap((p) => p.events),
  );
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

/** Whether the step is still the case's next one: a case that moved on (or was closed) ignores it. */
export function isCurrentStep(row: CaseRow | undefined, step: StepPayload): row is CaseRow {
  if (!row || row.tenant_id !== step.tenantId || !isInFlight(row.status as CaseStatus)) return false;
  return row.step_seq + 1 === step.seq && row.current_node_id === step.nodeId;
}

/**
 * Runs a batch of step jobs (the `engine.step` handler) inside the batch's transaction. A step for
 * a case that has moved on (closed by an analyst, or a duplicate) does nothing.
 */
export async function runSteps(
  ctx: AppContext,
  tx: Tx,
  jobs: ClaimedJob<StepPayload>[],
  claim: ClaimToken | undefined,
): Promise<Continuation[]> {
  const locked = await lockCases(
    tx,
    jobs.map((j) => j.payload.caseId),
  );
  const rows = new Map(locked.map((r) => [r.id, r]));
  const attributes = await getAttributesOf(tx, [...rows.values()]);
  const planned: Planned[] = [];
  for (const { payload: step } of jobs) {
    const row = rows.get(step.caseId);
    if (!isCurrentStep(row, step)) continue;
    const wf = await workflowOf(ctx.nodeTypes, tx, row);
    planned.push(
      await runChain(ctx, tx, row, wf, {
        seq: step.seq,
        nodeId: step.nodeId,
        attributes: attributes.get(row.id) ?? {},
        claim,
      }),
    );
  }
  return commit(tx, planned);
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
 * Runs an external node's step (the `engine.call` handler): its call with no transaction open
 * and no case lock held, then, in one transaction under the case lock, what the node decided and
 * the nodes after it. The job row is deleted in that transaction, so the result is applied once;
 * should the process die between the call and the commit, the call is made again.
 */
export async function runCallStep(ctx: AppContext, job: ClaimedJob<StepPayload>): Promise<void> {
  const step = job.payload;
  const before = await findCase(ctx.db.root, step.tenantId, step.caseId);
  if (!isCurrentStep(before, step)) return;
  const wf = await workflowOf(ctx.nodeTypes, ctx.db.root, before);
  const { node, type } = nodeOf(wf, step.nodeId);
  const attributes = (await getAttributesOf(ctx.db.root, [before])).get(before.id) ?? {};
  const vars = variablesOf(before, attributes, before.node_outputs);
  const called = type.call
    ? await type.call(node, { ctx, case: nodeCaseOf(before), vars, seq: step.seq })
    : undefined;
  await ctx.db.transaction(async (tx) => {
    const row = await lockCase(tx, step.tenantId, step.caseId);
    if (!isCurrentStep(row, step)) return;
    if (!(await deleteJob(tx, job.id))) return;
    const plan = await runChain(ctx, tx, row, wf, {
      seq: step.seq,
      nodeId: step.nodeId,
      attributes,
      claim: undefined,
      called: { value: called },
    });
    await commit(tx, [plan]);
  });
}
