import type { DecisionEntry } from "../case-model/index.js";
import type { NewEvent } from "../webhooks/index.js";
import type { CaseRow } from "./cases.repo.js";

/**
 * The payloads of the case events (decided, pending review, overridden, failed), emitted by the
 * engine and by analysts' overrides, with exactly the spec's fields and key
 * styles (snake_case identity keys); the node types' own events live with them (nodes/).
 * `webhookId` is added by each delivery.
 */
export interface ResultEnvelope {
  decision: DecisionEntry | null;
  decisionHistory: DecisionEntry[];
  workflow_result: Record<string, unknown> | null;
}

export function resultEnvelope(
  row: Pick<CaseRow, "decision" | "decision_history" | "workflow_result">,
): ResultEnvelope {
  return {
    decision: row.decision,
    decisionHistory: row.decision_history,
    workflow_result: row.workflow_result,
  };
}

export function decisionEvent(
  type: "case.decided" | "case.pending_review" | "case.decision_overridden",
  row: Pick<CaseRow, "id" | "tenant_id" | "external_customer_id" | "dry_run">,
  result: ResultEnvelope,
  at: Date,
): NewEvent {
  return {
    tenantId: row.tenant_id,
    caseId: row.id,
    type,
    webhookKey: null,
    dryRun: row.dry_run,
    payload: {
      event_type: type,
      case_id: row.id,
      ...(row.external_customer_id === null ? {} : { external_customer_id: row.external_customer_id }),
      tenant_id: row.tenant_id,
      result,
      timestamp: at.toISOString(),
    },
  };
}

/** `case.failed` (contract section 2): the workflow errored and the case ends without a decision. */
export function caseFailedEvent(
  row: Pick<CaseRow, "id" | "tenant_id" | "external_customer_id" | "dry_run">,
  error: { nodeId: string; message: string },
  at: Date,
): NewEvent {
  return {
    tenantId: row.tenant_id,
    caseId: row.id,
    type: "case.failed",
    webhookKey: null,
    dryRun: row.dry_run,
    payload: {
      event_type: "case.failed",
      case_id: row.id,
      tenant_id: row.tenant_id,
      ...(row.external_customer_id === null ? {} : { external_customer_id: row.external_customer_id }),
      error,
      timestamp: at.toISOString(),
    },
  };
}
