import type { AppContext } from "../../platform/context.js";
import { randomBase62, uuid } from "../../platform/crypto.js";
import type { Tx } from "../../platform/db/index.js";
import type { ClaimToken, Continuation, JobSpec } from "../../platform/jobs.js";
import { getAttributes } from "../attributes/attributes.repo.js";
import { type CaseStatus, type DecisionEntry, isInFlight } from "../cases/case-status.js";
import { type CasePatch, type CaseRow, lockCase } from "../cases/cases.repo.js";
import { emitEvent } from "../events/events.js";
import { checkNodeRfiTexts, NodeRfiError, raiseRfiFromNode } from "../rfi/rfi.node.js";
import {
  type CompiledNode,
  type CompiledWorkflow,
  ExpressionError,
  type ExpressionVariables,
} from "../workflows/workflow.types.js";
import { getCompiledWorkflow } from "../workflows/workflows.service.js";
import { decisionEvent, dispatchEvent, notificationEvent } from "./engine.events.js";
import { insertWait, type NewStep, type WaitRow, writeStep } from "./engine.repo.js";
import { evaluateNode, NodeEvaluationError, type NodeOutcome } from "./nodes.js";

/**
 * The workflow engine. Every node runs as one durable job (`engine.step`) in a transaction that
 * locks the case, records the node's step and output, applies its effects (events, waits,
 * decisions) and enqueues the next step. A crash anywhere rolls the step back and the job runs
 * again; a step that committed is never run twice (its job row is deleted in that same
 * transaction, and a step whose case has moved on is ignored). The case row lock means steps of
 * one case never run concurrently, whichever process runs them.
 */
export const STEP_JOB = "engine.step";
export const WAIT_TIMEOUT_JOB = "engine.wait-timeout";

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
  if (!wf)
    throw new Error(
      `workflow ${row.workflow_id} version ${row.workflow_version} of case ${row.id} is missing`,
    );
  return wf;
}

async function variablesFor(tx: Tx, row: CaseRow): Promise<ExpressionVariables> {
  return {
    payload: row.payload,
    subject: row.subject,
    metadata: row.metadata,
    case: { id: row.id, type: row.type, externalCustomerId: row.external_customer_id },
    customer: {
      attributes: row.external_customer_id
        ? await getAttributes(tx, row.tenant_id, row.external_customer_id)
        : {},
    },
    nodes: row.node_outputs,
  };
}

/** Runs one step. Called by the `engine.step` job inside its transaction. */
export async function runStep(
  ctx: AppContext,
  tx: Tx,
  step: StepPayload,
  claim?: ClaimToken,
): Promise<Continuation | undefined> {
  const row = await lockCase(tx, step.tenantId, step.caseId);
  // A step for a case that has moved on (closed by an analyst, or a duplicate) does nothing.
  if (!row || !isInFlight(row.status as CaseStatus)) return undefined;
  if (row.step_seq + 1 !== step.seq || row.current_node_id !== step.nodeId) return undefined;
  const wf = await workflowOf(tx, row);
  const node = wf.nodes.get(step.nodeId);
  if (!node) throw new Error(`node ${step.nodeId} is not in workflow ${wf.workflowId} v${wf.version}`);
  let outcome: NodeOutcome;
  try {
    outcome = evaluateNode(node, await variablesFor(tx, row));
    // Texts a partner could not send either (an invalid address…) fail the case before any write.
    if (outcome.kind === "raise_rfi") checkNodeRfiTexts({ nodeId: node.id, ...outcome });
  } catch (err) {
    if (
      !(err instanceof ExpressionError || err instanceof NodeEvaluationError || err instanceof NodeRfiError)
    ) {
      throw err;
    }
    outcome = { kind: "fail", message: err.message };
  }
  return applyOutcome(ctx, tx, row, node, step.seq, outcome, claim);
}

type StepRecord = Pick<NewStep, "status" | "output" | "nextNodeId" | "error">;

/** One statement: the step (new, or completing the one that paused), the case's state, the jobs. */
function commitStep(
  tx: Tx,
  row: CaseRow,
  at: { seq: number; nodeId: string; nodeType: string; mode: "insert" | "complete" },
  step: StepRecord,
  patch: CasePatch,
  jobs: JobSpec<unknown>[] = [],
): Promise<number[]> {
  const record: NewStep = {
    tenantId: row.tenant_id,
    caseId: row.id,
    seq: at.seq,
    nodeId: at.nodeId,
    nodeType: at.nodeType,
    ...step,
  };
  return writeStep(tx, { mode: at.mode, record }, { step_seq: at.seq, ...patch }, jobs);
}

function outputsWith(row: CaseRow, nodeId: string, output: unknown): string {
  return JSON.stringify({ ...row.node_outputs, [nodeId]: output });
}

/**
 * A finished node: its output recorded, the case running on, the next node's step scheduled.
 * Inside a step job (`claim` given) the next step is written claimed by the same worker and
 * returned, so the worker runs it straight after the commit instead of claiming it again.
 */
async function moveOn(
  tx: Tx,
  row: CaseRow,
  at: { seq: number; nodeId: string; nodeType: string; mode: "insert" | "complete" },
  output: unknown,
  next: string,
  claim?: ClaimToken,
): Promise<Continuation | undefined> {
  const job = { ...stepJob(row.tenant_id, row.id, at.seq + 1, next), ...(claim ? { claimedBy: claim } : {}) };
  const [id] = await commitStep(
    tx,
    row,
    at,
    { status: "completed", output, nextNodeId: next, error: null },
    { status: "running", current_node_id: next, node_outputs: outputsWith(row, at.nodeId, output) },
    [job],
  );
  if (!claim || id === undefined) return undefined;
  return { id, kind: job.kind, payload: job.payload, jobKey: job.jobKey, maxAttempts: job.maxAttempts };
}

/** The case fails: the step records why, the case keeps the error, nothing runs after. */
async function failCase(
  tx: Tx,
  row: CaseRow,
  at: { seq: number; nodeId: string; nodeType: string; mode: "insert" | "complete" },
  output: unknown,
  message: string,
): Promise<void> {
  await commitStep(
    tx,
    row,
    at,
    { status: "failed", output, nextNodeId: null, error: { message } },
    {
      status: "failed",
      current_node_id: null,
      error: JSON.stringify({ nodeId: at.nodeId, message, at: new Date().toISOString() }),
    },
  );
}

async function applyOutcome(
  ctx: AppContext,
  tx: Tx,
  row: CaseRow,
  node: CompiledNode,
  seq: number,
  outcome: NodeOutcome,
  claim: ClaimToken | undefined,
): Promise<Continuation | undefined> {
  const at = { seq, nodeId: node.id, nodeType: node.type, mode: "insert" as const };
  switch (outcome.kind) {
    case "continue":
      return moveOn(tx, row, at, outcome.output, outcome.next, claim);
    case "notify":
      await emitEvent(tx, notificationEvent(row, { nodeId: node.id, ...outcome }));
      return moveOn(tx, row, at, outcome.output, outcome.next, claim);
    case "decide":
      await decide(tx, row, at, outcome);
      return undefined;
    case "await_callback":
      await awaitCallback(ctx, tx, row, at, outcome);
      return undefined;
    case "raise_rfi":
      return raiseRfi(ctx, tx, row, at, outcome, claim);
    case "fail":
      await failCase(tx, row, at, null, outcome.message);
      return undefined;
  }
}

async function decide(
  tx: Tx,
  row: CaseRow,
  at: { seq: number; nodeId: string; nodeType: string; mode: "insert" },
  outcome: Extract<NodeOutcome, { kind: "decide" }>,
): Promise<void> {
  const now = new Date();
  const entry: DecisionEntry = {
    value: outcome.decision,
    source: outcome.source,
    actor: `node:${at.nodeId}`,
    decidedAt: now.toISOString(),
  };
  await commitStep(
    tx,
    row,
    at,
    { status: "completed", output: outcome.output, nextNodeId: null, error: null },
    {
      status: outcome.decision === "in_review" ? "in_review" : "decided",
      current_node_id: null,
      node_outputs: outputsWith(row, at.nodeId, outcome.output),
      decision: JSON.stringify(entry),
      decision_history: JSON.stringify([entry]),
      workflow_result: JSON.stringify(outcome.result),
    },
  );
  const type = outcome.decision === "in_review" ? "case.pending_review" : "case.decided";
  const result = { decision: entry, decisionHistory: [entry], workflow_result: outcome.result };
  await emitEvent(tx, decisionEvent(type, row, result, now));
}

async function awaitCallback(
  ctx: AppContext,
  tx: Tx,
  row: CaseRow,
  at: { seq: number; nodeId: string; nodeType: string; mode: "insert" },
  outcome: Extract<NodeOutcome, { kind: "await_callback" }>,
): Promise<void> {
  const waitId = uuid();
  const callbackRef = randomBase62(32);
  const expiresAt = new Date(Date.now() + outcome.expiresInSeconds * 1000);
  const callbackUrl = `${ctx.config.publicUrl}/cases/${row.id}/callbacks/${callbackRef}`;
  await insertWait(tx, {
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
  });
  await commitStep(
    tx,
    row,
    at,
    { status: "waiting", output: null, nextNodeId: null, error: null },
    { status: "waiting", current_node_id: at.nodeId },
    [
      {
        kind: WAIT_TIMEOUT_JOB,
        payload: { tenantId: row.tenant_id, caseId: row.id, waitId },
        runAt: expiresAt,
        jobKey: `wait-timeout:${waitId}`,
      },
    ],
  );
  await emitEvent(
    tx,
    dispatchEvent(row, {
      nodeId: at.nodeId,
      webhookKey: outcome.webhookKey,
      callbackUrl,
      expiresAt,
      payload: outcome.payload,
    }),
  );
}

async function raiseRfi(
  ctx: AppContext,
  tx: Tx,
  row: CaseRow,
  at: { seq: number; nodeId: string; nodeType: string; mode: "insert" },
  outcome: Extract<NodeOutcome, { kind: "raise_rfi" }>,
  claim: ClaimToken | undefined,
): Promise<Continuation | undefined> {
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
  if (!outcome.awaitResponse) return moveOn(tx, row, at, { rfiId, status: "pending" }, outcome.next, claim);
  await insertWait(tx, {
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
  });
  await commitStep(
    tx,
    row,
    at,
    { status: "waiting", output: { rfiId }, nextNodeId: null, error: null },
    { status: "waiting", current_node_id: at.nodeId },
  );
  return undefined;
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
  const at = {
    seq: wait.seq,
    nodeId: wait.node_id,
    nodeType: node?.type ?? "unknown",
    mode: "complete" as const,
  };
  if (next === undefined) await failCase(tx, row, at, output, failure);
  else await moveOn(tx, row, at, output, next);
}
