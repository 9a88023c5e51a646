import type { NodeType } from "../../workflows/node-type.js";
import { decisionNode } from "./decision.node.js";
import { externalCallbackNode } from "./external-callback.node.js";
import { notifyNode } from "./notify.node.js";
import { unavailableProviderNode } from "./provider-unavailable.node.js";
import { rulesNode } from "./rules.node.js";
import { scoreNode } from "./score.node.js";

/** The node types the engine itself provides; features register theirs beside these. */
export const engineNodeTypes: NodeType[] = [
  rulesNode,
  decisionNode,
  scoreNode,
  notifyNode,
  externalCallbackNode,
  unavailableProviderNode,
] as NodeType[];
