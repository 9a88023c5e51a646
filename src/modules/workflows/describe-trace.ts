import { isJsonObject, type JsonObject, type NodeTypes, type TraceEntry } from "./node-type.js";

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
