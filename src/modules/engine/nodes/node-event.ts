import type { EventType, NewEvent } from "../../webhooks/index.js";
import type { NodeCase } from "../../workflows/index.js";

/**
 * An event a node emits about its case, in the spec's camelCase: `event_type`, then `head`, the
 * case, the node and the webhook key it names, then `body`, then the time. Its `dryRun` is the
 * case's: a node adds it, or the engine does for the events of a node that keeps waiting.
 */
export function nodeEvent(
  kase: Pick<NodeCase, "tenantId" | "id">,
  type: EventType,
  node: { nodeId: string; webhookKey: string | undefined },
  body: Record<string, unknown>,
  head: Record<string, unknown> = {},
): Omit<NewEvent, "dryRun"> {
  const webhookKey = node.webhookKey ?? null;
  return {
    tenantId: kase.tenantId,
    caseId: kase.id,
    type,
    webhookKey,
    payload: {
      event_type: type,
      ...head,
      tenantId: kase.tenantId,
      caseId: kase.id,
      nodeId: node.nodeId,
      webhookKey,
      ...body,
      timestamp: new Date().toISOString(),
    },
  };
}
