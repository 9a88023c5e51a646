import type { Tx } from "../../platform/db/index.js";
import { type CaseStatus, isInFlight } from "../cases/case-status.js";
import { lockCase } from "../cases/cases.repo.js";
import { findOpenWaitForRfi, resolveWait } from "./engine.repo.js";
import { resumeFromWait, workflowOf } from "./engine.service.js";

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
export async function resumeAfterRfi(tx: Tx, resolution: RfiResolution): Promise<void> {
  const row = await lockCase(tx, resolution.tenantId, resolution.caseId);
  if (!row || !isInFlight(row.status as CaseStatus)) return;
  const wait = await findOpenWaitForRfi(tx, resolution.tenantId, resolution.caseId, resolution.rfiId);
  if (!wait) return;
  await resolveWait(tx, resolution.tenantId, wait.id, resolution.outcome);
  const node = (await workflowOf(tx, row)).nodes.get(wait.node_id);
  if (node?.type !== "information_request")
    throw new Error(`wait ${wait.id} is not on an information_request node`);
  const next = { answered: node.next, expired: node.onExpired, cancelled: node.onCancelled }[
    resolution.outcome
  ];
  await resumeFromWait(
    tx,
    row,
    wait,
    resolution.output,
    next,
    `node ${wait.node_id}: the information request was ${resolution.outcome} and the node has no ${
      resolution.outcome === "expired" ? "onExpired" : "onCancelled"
    }`,
  );
}
