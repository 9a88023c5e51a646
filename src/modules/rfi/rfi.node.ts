import type { AppContext } from "../../platform/context.js";
import type { Tx } from "../../platform/db/index.js";

/** An information request raised by a workflow node, with its texts already evaluated. */
export interface NodeRfiRequest {
  tenantId: string;
  caseId: string;
  caseType: string;
  nodeId: string;
  to: string;
  subject: string;
  body: string;
  cc: string[] | undefined;
  templateId: string | undefined;
  webhookKey: string | undefined;
  awaitResponse: boolean;
  /** The answer deadline (set when awaiting). */
  expiresAt: Date | null;
}

/**
 * Raises the request in the engine's transaction: stores it, emits `case.rfi_requested`
 * (`requested_by` `node:<nodeId>`, `source` `workflow`, plus `awaits_response` and
 * `response_expires_at` when awaiting) and schedules its expiry.
 */
export async function raiseRfiFromNode(
  _ctx: AppContext,
  _tx: Tx,
  _request: NodeRfiRequest,
): Promise<{ rfiId: string }> {
  throw new Error("information requests from workflow nodes are not available yet");
}
