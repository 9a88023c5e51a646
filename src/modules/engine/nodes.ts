import type { DecisionSource, DecisionValue } from "../cases/case-status.js";
import type { CompiledNode, ExpressionVariables } from "../workflows/workflow.types.js";

/**
 * What running one node decided, without doing any of it: evaluation is pure, and the engine
 * applies the outcome (records, events, waits) in the step's transaction.
 */
export type NodeOutcome =
  | { kind: "continue"; output: unknown; next: string }
  | {
      kind: "notify";
      output: Record<string, unknown>;
      next: string;
      payloadType: string | undefined;
      tag: string | undefined;
      webhookKey: string | undefined;
    }
  | {
      kind: "decide";
      decision: DecisionValue;
      source: Exclude<DecisionSource, "analyst">;
      /** Becomes `result.workflow_result`. */
      result: Record<string, unknown>;
      /** The node's own output, visible to nothing after it but kept on the step. */
      output: Record<string, unknown>;
    }
  | {
      kind: "await_callback";
      payload: Record<string, unknown>;
      webhookKey: string | undefined;
      expiresInSeconds: number;
    }
  | {
      kind: "raise_rfi";
      to: string;
      subject: string;
      body: string;
      cc: string[] | undefined;
      templateId: string | undefined;
      webhookKey: string | undefined;
      awaitResponse: boolean;
      expiresInSeconds: number | undefined;
      next: string;
    }
  | { kind: "fail"; message: string };

/** A node whose expressions evaluated to something it cannot use; fails the case like an ExpressionError. */
export class NodeEvaluationError extends Error {
  constructor(
    readonly nodeId: string,
    message: string,
  ) {
    super(`node ${nodeId}: ${message}`);
    this.name = "NodeEvaluationError";
  }
}

function text(nodeId: string, field: string, value: unknown): string {
  if (typeof value !== "string") {
    const got = value === null ? "null" : Array.isArray(value) ? "a list" : typeof value;
    throw new NodeEvaluationError(nodeId, `${field} must evaluate to a string, got ${got}`);
  }
  return value;
}

/**
 * Evaluates a node against the case's variables. Expression failures throw ExpressionError,
 * unusable results NodeEvaluationError; both fail the case.
 */
export function evaluateNode(node: CompiledNode, vars: ExpressionVariables): NodeOutcome {
  switch (node.type) {
    case "rules": {
      const index = node.rules.findIndex((rule) => rule.when.test(vars));
      const next = index === -1 ? node.default : (node.rules[index]?.next as string);
      return { kind: "continue", output: { matchedRule: index === -1 ? null : index, next }, next };
    }
    case "decision": {
      const matched = node.cases.find((c) => c.when.test(vars));
      const decision = node.decision ?? matched?.decision ?? node.default;
      if (!decision)
        return { kind: "fail", message: `node ${node.id}: no case matched and there is no default` };
      const result = node.output.evaluate(vars);
      return { kind: "decide", decision, source: "workflow", result, output: { decision, ...result } };
    }
    case "score": {
      let score = 0;
      for (const rule of node.rules) if (rule.when.test(vars)) score += rule.points;
      const band = node.bands.find((b) => b.minScore <= score);
      if (!band) {
        return { kind: "fail", message: `node ${node.id}: score ${score} is below every band's minScore` };
      }
      const withScore: ExpressionVariables = { ...vars, nodes: { ...vars.nodes, [node.id]: { score } } };
      const result = node.output.evaluate(withScore);
      return {
        kind: "decide",
        decision: band.decision,
        source: "risk_evaluation",
        result,
        output: { score, decision: band.decision, ...result },
      };
    }
    case "notify":
      return {
        kind: "notify",
        output: node.output.evaluate(vars),
        next: node.next,
        payloadType: node.payloadType,
        tag: node.tag,
        webhookKey: node.webhookKey,
      };
    case "external_callback":
      return {
        kind: "await_callback",
        payload: node.payload.evaluate(vars),
        webhookKey: node.webhookKey,
        expiresInSeconds: node.expiresInSeconds,
      };
    case "information_request":
      return {
        kind: "raise_rfi",
        to: text(node.id, "to", node.to.evaluate(vars)),
        subject: text(node.id, "subject", node.subject.evaluate(vars)),
        body: text(node.id, "body", node.body.evaluate(vars)),
        cc: node.cc,
        templateId: node.templateId,
        webhookKey: node.webhookKey,
        awaitResponse: node.awaitResponse,
        expiresInSeconds: node.expiresInSeconds,
        next: node.next,
      };
    case "provider":
      return {
        kind: "fail",
        message: `node ${node.id}: provider nodes (provider "${node.provider}") cannot run yet: no verification providers are available`,
      };
  }
}
