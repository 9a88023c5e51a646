import type { AppContext } from "../../platform/context.js";
import type { Tx } from "../../platform/db/index.js";
import { AppError, notFound } from "../../platform/errors.js";
import { type CaseStatus, isInFlight } from "../cases/case-status.js";
import { caseExists, lockCase } from "../cases/cases.repo.js";
import { findWait, findWaitByCallbackRef, listOpenWaits, resolveWait } from "./engine.repo.js";
import { resumeFromWait, workflowOf } from "./engine.service.js";

export interface CallbackAccepted {
  caseId: string;
  nodeId: string;
  status: "accepted";
}

/**
 * Delivers an external callback. The case row lock orders it against the node's timeout: of a
 * callback and its timeout exactly one resolves the wait; a callback that loses answers 410.
 */
export async function deliverCallback(
  ctx: AppContext,
  tenantId: string,
  caseId: string,
  callbackRef: string,
  body: Record<string, unknown>,
): Promise<CallbackAccepted> {
  return ctx.db.transaction(async (tx) => {
    const row = await lockCase(tx, tenantId, caseId);
    if (!row) throw notFound("case");
    const wait = await findWaitByCallbackRef(tx, tenantId, caseId, callbackRef);
    if (wait?.kind !== "callback") throw notFound("callback");
    if (wait.resolved_at) {
      if (wait.resolution === "timeout")
        throw new AppError("gone", "the callback expired before it was delivered");
      if (wait.resolution === "callback")
        throw new AppError("conflict", "the callback was already delivered");
      throw new AppError("conflict", `the node no longer waits for a callback (${wait.resolution})`);
    }
    if (wait.expires_at && wait.expires_at.getTime() <= Date.now()) {
      throw new AppError("gone", `the callback expired at ${wait.expires_at.toISOString()}`);
    }
    await resolveWait(tx, tenantId, wait.id, "callback");
    const node = (await workflowOf(tx, row)).nodes.get(wait.node_id);
    if (node?.type !== "external_callback")
      throw new Error(`wait ${wait.id} is not on an external_callback node`);
    await resumeFromWait(tx, row, wait, body, node.next, "unreachable");
    return { caseId, nodeId: wait.node_id, status: "accepted" };
  });
}

/** The `engine.wait-timeout` job: resolves a callback wait that is still open at its expiry. */
export async function expireCallbackWait(
  tx: Tx,
  payload: { tenantId: string; caseId: string; waitId: string },
): Promise<void> {
  const row = await lockCase(tx, payload.tenantId, payload.caseId);
  if (!row || !isInFlight(row.status as CaseStatus)) return;
  const wait = await findWait(tx, payload.tenantId, payload.waitId);
  // The callback won the race (or the case was closed): nothing to expire.
  if (!wait || wait.resolved_at) return;
  await resolveWait(tx, payload.tenantId, wait.id, "timeout");
  const node = (await workflowOf(tx, row)).nodes.get(wait.node_id);
  if (node?.type !== "external_callback")
    throw new Error(`wait ${wait.id} is not on an external_callback node`);
  const output = { timedOut: true, expiresAt: wait.expires_at?.toISOString() ?? null };
  await resumeFromWait(
    tx,
    row,
    wait,
    output,
    node.onTimeout,
    `node ${wait.node_id}: no callback before ${wait.expires_at?.toISOString()} and the node has no onTimeout`,
  );
}

export interface PausedNode {
  nodeId: string;
  providerId: string | null;
  pendingHandle: string;
  expiresAt: string | null;
  availableActions: Array<{ id: string; label: string; resolvesAwait: boolean }>;
}

/** The nodes of the case paused on an external system (callbacks and providers). */
export async function listPausedNodes(
  ctx: AppContext,
  tenantId: string,
  caseId: string,
): Promise<PausedNode[]> {
  if (!(await caseExists(ctx.db.root, tenantId, caseId))) throw notFound("case");
  const waits = await listOpenWaits(ctx.db.root, tenantId, caseId, ["callback", "provider"]);
  return waits.map((w) => ({
    nodeId: w.node_id,
    providerId: w.provider_id,
    pendingHandle: w.id,
    expiresAt: w.expires_at?.toISOString() ?? null,
    availableActions: [],
  }));
}
