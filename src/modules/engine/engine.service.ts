import type { AppContext } from "../../platform/context.js";
import { randomBase62, uuid } from "../../platform/crypto.js";
import type { Tx } from "../../platform/db/index.js";
import type { ClaimedJob, ClaimToken, Continuation, JobSpec } from "../../platform/jobs.js";
import { decisionLatency } from "../../platform/metrics.js";
import { getAttributesOf } from "../attributes/attributes.repo.js";
import { type CaseStatus, type DecisionEntry, isInFlight } from "../cases/case-status.js";
import { type CaseRow, lockCases } from "../cases/cases.repo.js";
import { emitEvents, type NewEvent } from "../events/events.js";
import { checkNodeRfiTexts, NodeRfiError, raiseRfiFromNode } from "../rfi/rfi.node.js";
import {
  type CompiledNode,
  type CompiledWorkflow,
  ExpressionError,
  type ExpressionVariables,
} from "../workflows/workflow.types.js";
import { getCompiledWorkflow } from "../workflows/workflows.service.js";
import { decisionEvent, dispatchEvent, notificationEvent, type ResultEnvelope } from "./engine.events.js";
import { type CaseState, type NewStep, type StepWrite, type WaitRow, writeSteps } from "./engine.repo.js";
import { evaluateNode, NodeEvaluationError, type NodeOutcome } from "./nodes.js";

/**
 * The workflow engine. Every node runs as one durable job (`engine.step`). A worker runs the step
 * jobs it holds in batches, each batch in one transaction that locks its cases, evaluates each
 * case's node, and writes every step (its row and output, the case's new state, the waits it
 * opens, the next step's job, its events) in a couple of statements. A crash anywhere rolls the
 * batch back and its jobs run again; a step that committed is never run twice (its job row is
 * deleted in that same transaction, and a step whose case has moved on is ignored). The case row
 * lock means steps of one case never run concurrently, whichever process runs them.
 */
export const STEP_JOB = "engine.step";
export const WAIT_TIMEOUT_JOB = "engine.wait-timeout";
/** Step jobs one transaction runs at most. */
export const STEP_BATCH = 32;

export interface StepPayload {
  tenantId: string;
  caseId: string;
  seq: number;
  nodeId: string;
}

export function stepJob(tenantId: string, caseId: string, seq: number, nodeId: string) {
  return {
    kind: STEP_JOB,
    payload: { tenantId, caseId, seq, nodeId } satisfies StepPayload,
    jobKey: `step:${caseId}:${seq}`,
    maxAttempts: 10,
  };
}

/** A case's workflow version, compiled; a missing one is an internal inconsistency. */
export async function workflowOf(tx: Tx, row: CaseRow): Promise<CompiledWorkflow> {
  const wf = await getCompiledWorkflow(tx, row.tenant_id, row.workflow_id, row.workflow_version);
  if (!wf) {
    throw new Error(
      `workflow ${row.workflow_id} version ${row.workflow_version} of case ${row.id} is missing`,
    );
  }
  return wf;
}

/** A step: where it is in the case, and whether it writes its row anew or completes a paused one. */
interface At {
  seq: number;
  nodeId: string;
  nodeType: string;
  mode: "insert" | "complete";
}

/** A planned step, with what only the service needs: its events and whether it continues here. */
interface Planned extends StepWrite {
  events: NewEvent[];
  /** The job key of the next step when it was written claimed, to run right after the commit. */
  continuation?: JobSpec<unknown>;
}

function stateOf(row: CaseRow): CaseState {
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

function plan(
  row: CaseRow,
  at: At,
  step: Pick<NewStep, "status" | "output" | "nextNodeId" | "error">,
  state: Partial<CaseState>,
  extra: Partial<Pick<Planned, "jobs" | "waits" | "events" | "continuation">> = {},
): Planned {
  const record: NewStep = {
    tenantId: row.tenant_id,
    caseId: row.id,
    seq: at.seq,
    nodeId: at.nodeId,
    nodeType: at.nodeType,
    ...step,
  };
  return {
    step: { mode: at.mode, record },
    state: { ...stateOf(row), stepSeq: at.seq, ...state },
    jobs: extra.jobs ?? [],
    waits: extra.waits ?? [],
    events: extra.events ?? [],
    ...(extra.continuation ? { continuation: extra.continuation } : {}),
  };
}

/**
 * A finished node: its output recorded, the case running on, the next node's step scheduled.
 * Inside a step job (`claim` given) the next step is written claimed by the same worker, which
 * runs it straight after the commit instead of claiming it again.
 */
function moveOn(
  row: CaseRow,
  at: At,
  output: unknown,
  next: string,
  claim?: ClaimToken,
  events: NewEvent[] = [],
) {
  const job = { ...stepJob(row.tenant_id, row.id, at.seq + 1, next), ...(claim ? { claimedBy: claim } : {}) };
  return plan(
    row,
    at,
    { status: "completed", output, nextNodeId: next, error: null },
    { status: "running", currentNodeId: next, nodeOutputs: { ...row.node_outputs, [at.nodeId]: output } },
    { jobs: [job], events, ...(claim ? { continuation: job } : {}) },
  );
}

/** The case fails: the step records why, the case keeps the error, nothing runs after. */
function failCase(row: CaseRow, at: At, output: unknown, message: string): Planned {
  return plan(
    row,
    at,
    { status: "failed", output, nextNodeId: null, error: { message } },
    {
      status: "failed",
      currentNodeId: null,
      error: { nodeId: at.nodeId, message, at: new Date().toISOString() },
    },
  );
}

function decide(row: CaseRow, at: At, outcome: Extract<NodeOutcome, { kind: "decide" }>): Planned {
  const now = new Date();
  const entry: DecisionEntry = {
    value: outcome.decision,
    source: outcome.source,
    actor: `node:${at.nodeId}`,
    decidedAt: now.toISOString(),
  };
  const type = outcome.decision === "in_review" ? "case.pending_review" : "case.decided";
  const result = { decision: entry, decisionHistory: [entry], workflow_result: outcome.result };
  return plan(
    row,
    at,
    { status: "completed", output: outcome.output, nextNodeId: null, error: null },
    {
      status: outcome.decision === "in_review" ? "in_review" : "decided",
      currentNodeId: null,
      nodeOutputs: { ...row.node_outputs, [at.nodeId]: outcome.output },
      decision: entry,
      decisionHistory: [entry],
      workflowResult: outcome.result,
    },
    { events: [decisionEvent(type, row, result, now)] },
  );
}

function awaitCallback(
  ctx: AppContext,
  row: CaseRow,
  at: At,
  outcome: Extract<NodeOutcome, { kind: "await_callback" }>,
): Planned {
  const waitId = uuid();
  const callbackRef = randomBase62(32);
  const expiresAt = new Date(Date.now() + outcome.expiresInSeconds * 1000);
  const callbackUrl = `${ctx.config.publicUrl}/cases/${row.id}/callbacks/${callbackRef}`;
  return plan(
    row,
    at,
    { status: "waiting", output: null, nextNodeId: null, error: null },
    { status: "waiting", currentNodeId: at.nodeId },
    {
      waits: [
        {
          id: waitId,
          tenantId: row.tenant_id,
          caseId: row.id,
          seq: at.seq,
          nodeId: at.nodeId,
          kind: "callback",
          callbackRef,
          rfiId: null,
          providerId: null,
          expiresAt,
        },
      ],
      jobs: [
        {
          kind: WAIT_TIMEOUT_JOB,
          payload: { tenantId: row.tenant_id, caseId: row.id, waitId },
          runAt: expiresAt,
          jobKey: `wait-timeout:${waitId}`,
        },
      ],
      events: [
        dispatchEvent(row, {
          nodeId: at.nodeId,
          webhookKey: outcome.webhookKey,
          callbackUrl,
          expiresAt,
          payload: outcome.payload,
        }),
      ],
    },
  );
}

async function raiseRfi(
  ctx: AppContext,
  tx: Tx,
  row: CaseRow,
  at: At,
  outcome: Extract<NodeOutcome, { kind: "raise_rfi" }>,
  claim: ClaimToken | undefined,
): Promise<Planned> {
  const expiresAt =
    outcome.awaitResponse && outcome.expiresInSeconds !== undefined
      ? new Date(Date.now() + outcome.expiresInSeconds * 1000)
      : null;
  const { rfiId } = await raiseRfiFromNode(ctx, tx, {
    tenantId: row.tenant_id,
    caseId: row.id,
    caseType: row.type,
    nodeId: at.nodeId,
    to: outcome.to,
    subject: outcome.subject,
    body: outcome.body,
    cc: outcome.cc,
    templateId: outcome.templateId,
    webhookKey: outcome.webhookKey,
    awaitResponse: outcome.awaitResponse,
    expiresAt,
  });
  if (!outcome.awaitResponse) return moveOn(row, at, { rfiId, status: "pending" }, outcome.next, claim);
  return plan(
    row,
    at,
    { status: "waiting", output: { rfiId }, nextNodeId: null, error: null },
    { status: "waiting", currentNodeId: at.nodeId },
    {
      waits: [
        {
          id: uuid(),
          tenantId: row.tenant_id,
          caseId: row.id,
          seq: at.seq,
          nodeId: at.nodeId,
          kind: "rfi",
          callbackRef: null,
          rfiId,
          providerId: null,
          expiresAt,
        },
      ],
    },
  );
}

async function planOutcome(
  ctx: AppContext,
  tx: Tx,
  row: CaseRow,
  node: CompiledNode,
  seq: number,
  outcome: NodeOutcome,
  claim: ClaimToken | undefined,
): Promise<Planned> {
  const at: At = { seq, nodeId: node.id, nodeType: node.type, mode: "insert" };
  switch (outcome.kind) {
    case "continue":
      return moveOn(row, at, outcome.output, outcome.next, claim);
    case "notify":
      return moveOn(row, at, outcome.output, outcome.next, claim, [
        notificationEvent(row, { nodeId: node.id, ...outcome }),
      ]);
    case "decide":
      return decide(row, at, outcome);
    case "await_callback":
      return awaitCallback(ctx, row, at, outcome);
    case "raise_rfi":
      return raiseRfi(ctx, tx, row, at, outcome, claim);
    case "fail":
      return failCase(row, at, null, outcome.message);
  }
}

/** Evaluates a node; an expression that fails, or texts a partner could not send, fail the case. */
function evaluate(node: CompiledNode, vars: ExpressionVariables): NodeOutcome {
  try {
    const outcome = evaluateNode(node, vars);
    if (outcome.kind === "raise_rfi") checkNodeRfiTexts({ nodeId: node.id, ...outcome });
    return outcome;
  } catch (err) {
    if (err instanceof ExpressionError || err instanceof NodeEvaluationError || err instanceof NodeRfiError) {
      return { kind: "fail", message: err.message };
    }
    throw err;
  }
}

/** Writes planned steps and their events; returns the continuations written claimed. */
async function commit(tx: Tx, planned: Planned[]): Promise<Continuation[]> {
  const ids = await writeSteps(tx, planned);
  await emitEvents(
    tx,
    planned.flatMap((p) => p.events),
  );
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
  const rows = new Map(
    (
      await lockCases(
        tx,
        jobs.map((j) => j.payload.caseId),
      )
    ).map((r) => [r.id, r]),
  );
  const attributes = await getAttributesOf(tx, [...rows.values()]);
  const planned: Planned[] = [];
  for (const { payload: step } of jobs) {
    const row = rows.get(step.caseId);
    if (!row || row.tenant_id !== step.tenantId || !isInFlight(row.status as CaseStatus)) continue;
    if (row.step_seq + 1 !== step.seq || row.current_node_id !== step.nodeId) continue;
    const wf = await workflowOf(tx, row);
    const node = wf.nodes.get(step.nodeId);
    if (!node) throw new Error(`node ${step.nodeId} is not in workflow ${wf.workflowId} v${wf.version}`);
    const vars: ExpressionVariables = {
      payload: row.payload,
      subject: row.subject,
      metadata: row.metadata,
      case: { id: row.id, type: row.type, externalCustomerId: row.external_customer_id },
      customer: { attributes: attributes.get(row.id) ?? {} },
      nodes: row.node_outputs,
    };
    planned.push(await planOutcome(ctx, tx, row, node, step.seq, evaluate(node, vars), claim));
  }
  const continuations = await commit(tx, planned);
  observeDecisions(planned, rows);
  return continuations;
}

function observeDecisions(planned: Planned[], rows: Map<string, CaseRow>): void {
  for (const event of planned.flatMap((p) => p.events)) {
    if (event.type !== "case.decided" && event.type !== "case.pending_review") continue;
    const row = event.caseId === null ? undefined : rows.get(event.caseId);
    const decision = (event.payload.result as ResultEnvelope | undefined)?.decision?.value;
    if (!row || row.dry_run || !decision) continue;
    decisionLatency.observe({ decision }, (Date.now() - row.created_at.getTime()) / 1000);
  }
}

/**
 * Continues a case whose paused node has just been resolved (the wait already marked resolved
 * by the caller, under the case lock): the node's output is recorded and the workflow goes on
 * at `next`, or the case fails when the node has no path for this resolution.
 */
export async function resumeFromWait(
  tx: Tx,
  row: CaseRow,
  wait: WaitRow,
  output: unknown,
  next: string | undefined,
  failure: string,
): Promise<void> {
  const node = (await workflowOf(tx, row)).nodes.get(wait.node_id);
  const at: At = { seq: wait.seq, nodeId: wait.node_id, nodeType: node?.type ?? "unknown", mode: "complete" };
  await commit(tx, [next === undefined ? failCase(row, at, output, failure) : moveOn(row, at, output, next)]);
}
