import type { Executor } from "../../platform/db/index.js";
import { isJsonObject, type JsonObject, type NodeTypes, type TraceEntry } from "../workflows/index.js";
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

/**
 * The trace in words, one line per fact, each node as its node type describes it (`cds case
 * show`). `definition` is the case's workflow version, to quote the rules that held.
 */
export function describeTrace(types: NodeTypes, trace: TraceEntry[], definition?: JsonObject): string[] {
  const nodes = Array.isArray(definition?.nodes) ? definition.nodes.filter(isJsonObject) : [];
  const lines: string[] = [];
  for (const entry of trace) {
    const node = nodes.find((n) => n.id === entry.nodeId);
    const type = types.of(entry.nodeType);
    const facts = type ? type.describe(entry, node) : [`${entry.status}`];
    lines.push(`${entry.seq}. ${entry.nodeId} (${entry.nodeType})`);
    for (const fact of facts) lines.push(`   ${fact}`);
  }
  return lines;
}
