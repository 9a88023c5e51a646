import type { DecisionValue } from "../../case-model/index.js";
import type { CompiledCondition, CompiledOutput, ExpressionVariables } from "../../workflows/index.js";
import {
  clauseConditions,
  clauses,
  compileCondition,
  compileOutput,
  describeEnd,
  isJsonObject,
  LIMITS,
  mapExpressions,
  type NodeType,
  schemaRef,
} from "../../workflows/index.js";
import { clauseAt } from "./describe.js";

/** Sums the points of every rule that holds; the band with the highest minScore not above it decides. */
export interface ScoreNode {
  id: string;
  type: "score";
  rules: Array<{ when: CompiledCondition; points: number }>;
  /** Sorted by minScore, highest first; `index` is the band's place in the definition. */
  bands: Array<{ minScore: number; decision: DecisionValue; index: number }>;
  output: CompiledOutput;
}

export const scoreNode: NodeType<ScoreNode> = {
  type: "score",
  effects: "none",
  definition: {
    description:
      "Sums the points of every rule that holds; the band with the highest minScore not above the score decides.",
    required: ["rules", "bands"],
    properties: {
      rules: clauses(LIMITS.rulesPerNode, { when: schemaRef("condition"), points: schemaRef("score") }),
      bands: clauses(LIMITS.bands, { minScore: schemaRef("score"), decision: schemaRef("decision") }),
      output: schemaRef("output"),
    },
  },
  references: () => [],
  expressions: (node, at) => [
    ...clauseConditions(node, at, "rules"),
    // The output reads the node's own score as nodes.<id>.score.
    ...mapExpressions(node, at, "output").map((e) => ({ ...e, readsOwnNode: true })),
  ],
  check(node, at, problems) {
    if (!Array.isArray(node.bands)) return;
    const scores = node.bands.map((b) => (isJsonObject(b) ? b.minScore : undefined));
    scores.forEach((s, j) => {
      if (typeof s === "number" && scores.indexOf(s) !== j) {
        problems.push({ path: `${at}.bands[${j}].minScore`, message: `repeats the minScore ${s}` });
      }
    });
    // A score below every band would leave the case without a decision.
    const points = Array.isArray(node.rules) ? node.rules.map((r) => (isJsonObject(r) ? r.points : 0)) : [];
    const lowest = points.reduce<number>((sum, p) => (typeof p === "number" && p < 0 ? sum + p : sum), 0);
    const floors = scores.filter((s): s is number => typeof s === "number");
    if (floors.length > 0 && Math.min(...floors) > lowest) {
      problems.push({
        path: `${at}.bands`,
        message: `no band covers the lowest possible score ${lowest}; the lowest minScore must be at most ${lowest}`,
      });
    }
  },
  compile(node) {
    const rules = node.rules as Array<{ when: string; points: number }>;
    const bands = node.bands as Array<{ minScore: number; decision: DecisionValue }>;
    return {
      id: node.id,
      type: "score",
      rules: rules.map((r) => ({ when: compileCondition(node.id, r.when), points: r.points })),
      bands: bands.map((b, index) => ({ ...b, index })).sort((a, b) => b.minScore - a.minScore),
      output: compileOutput(node.id, node.output as Record<string, string> | undefined),
    };
  },
  evaluate(node, { vars }) {
    let score = 0;
    const contributions: Array<{ index: number; points: number }> = [];
    node.rules.forEach((rule, index) => {
      if (!rule.when.test(vars)) return;
      score += rule.points;
      contributions.push({ index, points: rule.points });
    });
    const band = node.bands.find((b) => b.minScore <= score);
    if (!band) {
      return {
        kind: "fail",
        message: `node ${node.id}: score ${score} is below every band's minScore`,
        explain: { score, contributions, band: null },
      };
    }
    const withScore: ExpressionVariables = { ...vars, nodes: { ...vars.nodes, [node.id]: { score } } };
    const result = node.output.evaluate(withScore);
    return {
      kind: "decide",
      decision: band.decision,
      source: "risk_evaluation",
      result,
      output: { score, decision: band.decision, ...result },
      explain: { score, contributions, band: band.index },
    };
  },
  describe(entry, definition) {
    const lines: string[] = [];
    const contributions = Array.isArray(entry.contributions) ? entry.contributions : [];
    for (const c of contributions as Array<{ index: number; points: number }>) {
      const when = clauseAt(definition, "rules", c.index)?.when;
      lines.push(
        `rule ${c.index + 1}${typeof when === "string" ? ` (${when})` : ""} held: ${signed(c.points)} points`,
      );
    }
    if (contributions.length === 0) lines.push("no rule held: 0 points");
    if (typeof entry.score === "number") lines.push(`score ${entry.score}`);
    if (entry.status !== "completed") return [...lines, ...describeEnd(entry)];
    const band = clauseAt(definition, "bands", entry.band);
    const decision = (entry.output as { decision?: unknown } | null)?.decision;
    const floor = typeof band?.minScore === "number" ? ` (minScore ${band.minScore})` : "";
    lines.push(`band ${typeof entry.band === "number" ? entry.band + 1 : "?"}${floor}: decided ${decision}`);
    return lines;
  },
};

function signed(points: number): string {
  return points >= 0 ? `+${points}` : `${points}`;
}
