import type { CompiledCondition } from "../../workflows/index.js";
import {
  clauseConditions,
  clauses,
  compileCondition,
  describeEnd,
  fieldReferences,
  isJsonObject,
  LIMITS,
  type NodeReference,
  type NodeType,
  schemaRef,
} from "../../workflows/index.js";
import { clauseAt, matchedClause } from "./describe.js";

/** Rules in order: the first whose `when` holds picks `next`; when none holds, `default`. */
export interface RulesNode {
  id: string;
  type: "rules";
  rules: Array<{ when: CompiledCondition; next: string }>;
  default: string;
}

export const rulesNode: NodeType<RulesNode> = {
  type: "rules",
  effects: "none",
  definition: {
    description: "Rules in order: the first whose `when` holds picks `next`; when none holds, `default`.",
    required: ["rules", "default"],
    properties: {
      rules: clauses(LIMITS.rulesPerNode, { when: schemaRef("condition"), next: schemaRef("nodeRef") }),
      default: schemaRef("nodeRef"),
    },
  },
  references(node, at) {
    const refs: NodeReference[] = [];
    if (Array.isArray(node.rules)) {
      node.rules.forEach((rule, j) => {
        if (isJsonObject(rule) && typeof rule.next === "string")
          refs.push({ path: `${at}.rules[${j}].next`, target: rule.next });
      });
    }
    return [...refs, ...fieldReferences(node, at, ["default"])];
  },
  expressions: (node, at) => clauseConditions(node, at, "rules"),
  compile(node) {
    const rules = node.rules as Array<{ when: string; next: string }>;
    return {
      id: node.id,
      type: "rules",
      rules: rules.map((r) => ({ when: compileCondition(node.id, r.when), next: r.next })),
      default: node.default as string,
    };
  },
  evaluate(node, { vars }) {
    const index = node.rules.findIndex((rule) => rule.when.test(vars));
    const next = index === -1 ? node.default : (node.rules[index]?.next as string);
    return {
      kind: "continue",
      next,
      output: { matchedRule: index === -1 ? null : index, next },
      explain: { matched: index === -1 ? "default" : index },
    };
  },
  describe(entry, definition) {
    if (entry.status !== "completed") return describeEnd(entry);
    const clause = clauseAt(definition, "rules", entry.matched);
    return [`${matchedClause("rule", entry.matched, clause?.when)}: went on to ${entry.next}`];
  },
};
