import type { Tx } from "../../platform/db/index.js";

/** How an information request that a workflow node may be waiting on was resolved. */
export interface RfiResolution {
  tenantId: string;
  caseId: string;
  rfiId: string;
  outcome: "answered" | "expired" | "cancelled";
  /** The node's output: `fields` maps each answered key to its value. */
  output: {
    status: "answered" | "expired" | "cancelled";
    fields: Record<string, unknown>;
    documents: Array<Record<string, unknown>>;
  };
}

/**
 * Called by the information-requests module, in the transaction that answers, cancels or
 * expires a request. When an awaiting `information_request` node waits on that request, the
 * workflow continues (`next`, `onExpired` or `onCancelled`) from a job enqueued in the same
 * transaction; otherwise nothing happens.
 */
export async function resumeAfterRfi(_tx: Tx, _resolution: RfiResolution): Promise<void> {
  // Filled in by the workflow engine.
}
