import type { Executor } from "../../platform/db/index.js";
import { isJsonObject, type TraceEntry } from "../workflows/index.js";
import { listSteps, type StepRow } from "./engine.repo.js";

export type { TraceEntry };

const STATUSES = new Set(["completed", "waiting", "failed"]);

function entryOf(step: StepRow): TraceEntry {
  const error = isJsonObject(step.error) && typeof step.error.message === "string" ? step.error : undefined;
  return {
    seq: step.seq,
    nodeId: step.node_id,
    nodeType: step.node_type,
    status: (STATUSES.has(step.status) ? step.status : "failed") as TraceEntry["status"],
    startedAt: step.created_at.toISOString(),
    finishedAt: step.finished_at?.toISOString() ?? null,
    output: step.output ?? null,
    next: step.next_node_id,
    ...(error ? { error: { message: error.message as string } } : {}),
    ...(step.explain ?? {}),
  };
}

/**
 * The steps the case took, in order (contract section 4, "Trace"): each node's status, times,
 * output and next node, and its node type's facts about why it went where it went.
 */
export async function caseTrace(db: Executor, tenantId: string, caseId: string): Promise<TraceEntry[]> {
  return (await listSteps(db, tenantId, caseId)).map(entryOf);
}
