import { describeEnd, fieldReferences, type NodeType } from "../../workflows/node-type.js";
import { PROVIDER_ID_PATTERN } from "../../workflows/workflow.schema.js";

/**
 * The `provider` node's definition, accepted so that workflows can be written against it, and a
 * run that fails the case with a clear error: no verification provider is available in this
 * build. The providers module replaces it with the node type that runs brokers.
 */
export interface UnavailableProviderNode {
  id: string;
  type: "provider";
  provider: string;
  config: Record<string, unknown>;
  next: string;
  onTimeout: string | undefined;
}

export const unavailableProviderNode: NodeType<UnavailableProviderNode> = {
  type: "provider",
  effects: "none",
  definition: {
    description: "Runs a verification provider; may pause with pending actions until it reports a result.",
    required: ["provider", "next"],
    properties: {
      provider: { type: "string", pattern: PROVIDER_ID_PATTERN },
      config: { type: "object" },
      next: { $ref: "#/$defs/nodeRef" },
      onTimeout: { $ref: "#/$defs/nodeRef" },
    },
  },
  references: (node, at) => fieldReferences(node, at, ["next", "onTimeout"]),
  expressions: () => [],
  compile(node) {
    return {
      id: node.id,
      type: "provider",
      provider: node.provider as string,
      config: (node.config as Record<string, unknown> | undefined) ?? {},
      next: node.next as string,
      onTimeout: node.onTimeout as string | undefined,
    };
  },
  evaluate(node) {
    return {
      kind: "fail",
      message: `node ${node.id}: provider nodes (provider "${node.provider}") cannot run yet: no verification providers are available`,
    };
  },
  describe: describeEnd,
};
