import type { DecisionEntry } from "../cases/case-status.js";
import type { CaseRow } from "../cases/cases.repo.js";
import type { NewEvent } from "../events/events.js";

/**
 * The payloads of the events the engine emits, with exactly the spec's fields and key styles:
 * decision events in snake_case identity keys, dispatch and notification in camelCase.
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
  row: Pick<CaseRow, "id" | "tenant_id" | "external_customer_id">,
  result: ResultEnvelope,
  at: Date,
): NewEvent {
  return {
    tenantId: row.tenant_id,
    caseId: row.id,
    type,
    webhookKey: null,
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

export function dispatchEvent(
  row: Pick<CaseRow, "id" | "tenant_id">,
  input: {
    nodeId: string;
    webhookKey: string | undefined;
    callbackUrl: string;
    expiresAt: Date;
    payload: unknown;
  },
): NewEvent {
  return {
    tenantId: row.tenant_id,
    caseId: row.id,
    type: "external_callback.dispatch",
    webhookKey: input.webhookKey ?? null,
    payload: {
      event_type: "external_callback.dispatch",
      tenantId: row.tenant_id,
      caseId: row.id,
      nodeId: input.nodeId,
      webhookKey: input.webhookKey ?? null,
      callbackUrl: input.callbackUrl,
      expiresAt: input.expiresAt.toISOString(),
      payload: input.payload,
    },
  };
}

export function notificationEvent(
  row: Pick<CaseRow, "id" | "tenant_id">,
  input: {
    nodeId: string;
    payloadType: string | undefined;
    tag: string | undefined;
    webhookKey: string | undefined;
    output: unknown;
  },
): NewEvent {
  return {
    tenantId: row.tenant_id,
    caseId: row.id,
    type: "node.notification",
    webhookKey: input.webhookKey ?? null,
    payload: {
      event_type: "node.notification",
      ...(input.payloadType === undefined ? {} : { payloadType: input.payloadType }),
      ...(input.tag === undefined ? {} : { tag: input.tag }),
      tenantId: row.tenant_id,
      caseId: row.id,
      nodeId: input.nodeId,
      webhookKey: input.webhookKey ?? null,
      output: input.output,
    },
  };
}
