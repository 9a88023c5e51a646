import type { JobSpec } from "../../platform/jobs.js";
import { type CaseStatus, isInFlight } from "../case-model/index.js";
import type { CaseRow } from "../cases/index.js";
import type { OffloadEntry, WantedExpression } from "../workflows/index.js";

export const STEP_JOB = "engine.step";
export const CALL_JOB = "engine.call";
export const EVALUATE_JOB = "engine.evaluate";
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

/** An expression of a node handed over to a thread, with what earlier rounds evaluated there (decision 0024). */
export interface EvaluationJobPayload extends StepPayload {
  expression: WantedExpression;
  /** 1 for the node's first expression sent to a thread. */
  round: number;
  results: OffloadEntry[];
  /** The list answers the node's evaluation had learned. */
  answers: Array<{ list: string; value: string; found: boolean }>;
}

export function evaluationJob(
  row: CaseRow,
  seq: number,
  nodeId: string,
  handed: Pick<EvaluationJobPayload, "expression" | "round" | "results" | "answers">,
): JobSpec<EvaluationJobPayload> {
  return {
    kind: EVALUATE_JOB,
    payload: { tenantId: row.tenant_id, caseId: row.id, seq, nodeId, ...handed },
    jobKey: `evaluate:${row.id}:${seq}:${handed.round}`,
    maxAttempts: STEP_ATTEMPTS,
  };
}

export interface WaitTimeoutPayload {
  tenantId: string;
  caseId: string;
  waitId: string;
}

export function waitTimeoutJob(row: CaseRow, waitId: string, runAt: Date): JobSpec<WaitTimeoutPayload> {
  return {
    kind: WAIT_TIMEOUT_JOB,
    payload: { tenantId: row.tenant_id, caseId: row.id, waitId },
    runAt,
    jobKey: `wait-timeout:${waitId}`,
  };
}

/** Whether the step is still the case's next one: a case that moved on (or was closed) ignores it. */
export function isCurrentStep(row: CaseRow | undefined, step: StepPayload): row is CaseRow {
  if (!row || row.tenant_id !== step.tenantId || !isInFlight(row.status as CaseStatus)) return false;
  return row.step_seq + 1 === step.seq && row.current_node_id === step.nodeId;
}
