import type { DecisionValue } from "../../case-model/index.js";
import type { CompiledCondition, CompiledOutput } from "../../workflows/index.js";
import {
  clauseConditions,
  clauses,
  compileCondition,
  compileOutput,
  describeEnd,
  LIMITS,
  mapExpressions,
  type NodeType,
  schemaRef,
} from "../../workflows/index.js";
import { clauseAt, matchedClause } from "./describe.js";

/** Ends the workflow with a fixed `decision`, or the first case whose `when` holds, else `default`. */
export interface DecisionNode {
  id: string;
  type: "decision";
  decision: DecisionValue | undefined;
  cases: Array<{ when: CompiledCondition; decision: DecisionValue }>;
  default: DecisionValue | undefined;
  output: CompiledOutput;
}

export const decisionNode: NodeType<DecisionNode> = {
  type: "decision",
  effects: "none",
  definition: {
    description:
      "Ends the workflow with a fixed `decision`, or the first case whose `when` holds, else `default`.",
    required: [],
    properties: {
      decision: schemaRef("decision"),
      cases: clauses(LIMITS.rulesPerNode, { when: schemaRef("condition"), decision: schemaRef("decision") }),
      default: schemaRef("decision"),
      output: schemaRef("output"),
    },
  },
  references: () => [],
  expressions: (node, at) => [...clauseConditions(node, at, "cases"), ...mapExpressions(node, at, "output")],
  check(node, at, problems) {
    const has = (field: string) => node[field] !== undefined;
    if (has("decision")) {
      if (has("cases") || has("default")) {
        problems.push({ path: `${at}.decision`, message: "a fixed decision excludes cases and default" });
      }
    } else if (!has("cases") && !has("default")) {
      problems.push({ path: at, message: "needs a fixed decision, or cases with a default" });
    } else if (!has("cases")) {
      problems.push({ path: `${at}.cases`, message: "is required with default" });
    } else if (!has("default")) {
      problems.push({
        path: `${at}.default`,
        message: "is required with cases: it decides when no case holds",
      });
    }
  },
  compile(node) {
    const cases = (node.cases ?? []) as Array<{ when: string; decision: DecisionValue }>;
    return {
      id: node.id,
      type: "decision",
      decision: node.decision as DecisionValue | undefined,
      cases: cases.map((c) => ({ when: compileCondition(node.id, c.when), decision: c.decision })),
      default: node.default as DecisionValue | undefined,
      output: compileOutput(node.id, node.output as Record<string, string> | undefined),
    };
  },
  evaluate(node, { vars }) {
    const index = node.decision === undefined ? node.cases.findIndex((c) => c.when.test(vars)) : -1;
    const decision = node.decision ?? node.cases[index]?.decision ?? node.default;
    const explain = { matched: index === -1 ? "default" : index };
    if (!decision)
      return { kind: "fail", message: `node ${node.id}: no case matched and there is no default`, explain };
    const result = node.output.evaluate(vars);
    return {
      kind: "decide",
      decision,
      source: "workflow",
      result,
      output: { decision, ...result },
      explain,
    };
  },
  describe(entry, definition) {
    if (entry.status !== "completed") return describeEnd(entry);
    const decision = (entry.output as { decision?: unknown } | null)?.decision;
    if (typeof definition?.decision === "string") return [`decided ${decision} (a fixed decision)`];
    const clause = clauseAt(definition, "cases", entry.matched);
    return [`${matchedClause("case", entry.matched, clause?.when)}: decided ${decision}`];
  },
};
