import type { Executor } from "../../platform/db/index.js";
import { emitEvent } from "../webhooks/index.js";
import type { RfiRow } from "./rfi.repo.js";

/**
 * `case.rfi_requested` with exactly the spec's fields: the optional ones only when set.
 * `awaits_response` marks a request a workflow node waits on; `response_expires_at` is present
 * whenever the request has a deadline, so that the partner's email can state it.
 */
export function requestedPayload(row: RfiRow, caseType: string): Record<string, unknown> {
  return {
    event_type: "case.rfi_requested",
    tenant_id: row.tenant_id,
    case_id: row.case_id,
    rfi_id: row.id,
    case_type: caseType,
    to: row.recipient,
    subject: row.subject,
    body: row.body,
    requested_by: row.requested_by,
    source: row.source,
    ...(row.template_id !== null ? { template_id: row.template_id } : {}),
    ...(row.cc !== null && row.cc.length > 0 ? { cc: row.cc } : {}),
    ...(row.webhook_key !== null ? { webhook_key: row.webhook_key } : {}),
    ...(row.awaits_response ? { awaits_response: true } : {}),
    ...(row.expires_at !== null ? { response_expires_at: row.expires_at.toISOString() } : {}),
    timestamp: new Date().toISOString(),
  };
}

/** Raises (or, for a reminder, raises again) the request's `case.rfi_requested`. */
/** `kase`: the request's case, whose type the event names and whose dry run it follows. */
export function emitRequested(
  tx: Executor,
  row: RfiRow,
  kase: { type: string; dryRun: boolean },
): Promise<string> {
  return emitEvent(tx, {
    tenantId: row.tenant_id,
    caseId: row.case_id,
    type: "case.rfi_requested",
    webhookKey: row.webhook_key,
    dryRun: kase.dryRun,
    payload: requestedPayload(row, kase.type),
  });
}

/** `case.rfi_answered`: attribution and counts only, never the answer's content. */
export function emitAnswered(
  tx: Executor,
  row: RfiRow,
  counts: { fieldCount: number; documentCount: number },
  dryRun: boolean,
): Promise<string> {
  return emitEvent(tx, {
    tenantId: row.tenant_id,
    caseId: row.case_id,
    type: "case.rfi_answered",
    webhookKey: row.webhook_key,
    dryRun,
    payload: {
      event_type: "case.rfi_answered",
      tenant_id: row.tenant_id,
      case_id: row.case_id,
      rfi_id: row.id,
      source: row.answer_source,
      answered_by: row.answered_by,
      field_count: counts.fieldCount,
      document_count: counts.documentCount,
      ...(row.webhook_key !== null ? { webhook_key: row.webhook_key } : {}),
      timestamp: (row.answered_at ?? new Date()).toISOString(),
    },
  });
}
