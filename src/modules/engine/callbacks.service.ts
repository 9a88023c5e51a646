import type { AppContext } from "../../platform/context.js";
import { AppError, notFound } from "../../platform/errors.js";
import { findCase } from "../cases/index.js";
import { listOpenWaits } from "./engine.repo.js";
import { CALLBACK_WAIT } from "./nodes/external-callback.node.js";
import { workflowOf } from "./plan.js";
import { openWait, resumeWait, TIMEOUT } from "./resume.js";

export interface CallbackAccepted {
  caseId: string;
  nodeId: string;
  status: "accepted";
}

/**
 * Delivers an external callback through `resumeWait`. The case row lock orders it against the
 * node's timeout: of a callback and its timeout exactly one resolves the wait; a callback that
 * loses answers 410.
 */
export async function deliverCallback(
  ctx: AppContext,
  tenantId: string,
  caseId: string,
  callbackRef: string,
  body: Record<string, unknown>,
): Promise<CallbackAccepted> {
  return ctx.db.transaction(async (tx) => {
    const result = await resumeWait(
      ctx,
      tx,
      { tenantId, caseId, kind: CALLBACK_WAIT, ref: callbackRef },
      { kind: CALLBACK_WAIT, output: body },
      { refuseExpired: true },
    );
    switch (result.status) {
      case "no_case":
        throw notFound("case");
      case "no_wait":
        throw notFound("callback");
      case "expired":
        throw new AppError("gone", `the callback expired at ${result.wait.expires_at?.toISOString()}`);
      case "resolved":
        if (result.wait.resolution === TIMEOUT)
          throw new AppError("gone", "the callback expired before it was delivered");
        if (result.wait.resolution === CALLBACK_WAIT)
          throw new AppError("conflict", "the callback was already delivered");
        throw new AppError("conflict", `the node no longer waits for a callback (${result.wait.resolution})`);
      case "case_finished":
        throw new AppError("conflict", "the node no longer waits for a callback: the case has ended");
      case "kept_waiting":
      case "resumed":
        return { caseId, nodeId: result.wait.node_id, status: "accepted" };
    }
  });
}

export interface PausedNode {
  nodeId: string;
  providerId: string | null;
  pendingHandle: string;
  expiresAt: string | null;
  availableActions: Array<{ id: string; label: string; resolvesAwait: boolean }>;
}

/** The nodes of the case paused on an external system, as their node types show them. */
export async function listPausedNodes(
  ctx: AppContext,
  tenantId: string,
  caseId: string,
): Promise<PausedNode[]> {
  const row = await findCase(ctx.db.root, tenantId, caseId);
  if (!row) throw notFound("case");
  const waits = await listOpenWaits(ctx.db.root, tenantId, caseId);
  if (waits.length === 0) return [];
  const wf = await workflowOf(ctx.nodeTypes, ctx.db.root, row);
  const paused: PausedNode[] = [];
  for (const w of waits) {
    const node = wf.nodes.get(w.node_id);
    const view = node && wf.nodeTypes.of(node.type)?.pending?.(node, openWait(w));
    if (!view) continue;
    paused.push({
      nodeId: w.node_id,
      providerId: view.providerId,
      pendingHandle: w.id,
      expiresAt: w.expires_at?.toISOString() ?? null,
      availableActions: view.availableActions,
    });
  }
  return paused;
}
