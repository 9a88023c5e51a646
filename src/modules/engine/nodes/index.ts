import type { NodeType } from "../../workflows/index.js";
import { decisionNode } from "./decision.node.js";
import { externalCallbackNode } from "./external-callback.node.js";
import { notifyNode } from "./notify.node.js";
import { rulesNode } from "./rules.node.js";
import { scoreNode } from "./score.node.js";

/**
 * The node types the engine itself provides; features register theirs beside these (`provider`
 * from the providers module, `information_request` from rfi).
 */
export const engineNodeTypes: NodeType[] = [
  rulesNode,
  decisionNode,
  scoreNode,
  notifyNode,
  externalCallbackNode,
] as NodeType[];
