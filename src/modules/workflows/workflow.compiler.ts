import type { ErrorDetail } from "../../platform/errors.js";
import { compileInputSchema, detailsOf } from "./json-schema.js";
import { compileCondition, compileOutput, compileText } from "./workflow.expressions.js";
import { LIMITS } from "./workflow.schema.js";
import type { CompiledNode, CompiledWorkflow, NodeDefinition, WorkflowDefinition } from "./workflow.types.js";

export interface VersionKey {
  tenantId: string;
  workflowId: string;
  version: number;
}

/**
 * Compiles a stored (so already validated) definition into what the engine runs: every
 * expression parsed and type-checked once, the input schema compiled once.
 */
export function compileWorkflow(key: VersionKey, definition: WorkflowDefinition): CompiledWorkflow {
  const nodes = new Map<string, CompiledNode>();
  for (const node of definition.nodes) nodes.set(node.id, compileNode(node));
  const validate = compileInputSchema(definition.inputSchema);
  return Object.freeze({
    tenantId: key.tenantId,
    workflowId: key.workflowId,
    version: key.version,
    definition,
    start: definition.start,
    nodes,
    validatePayload(payload: unknown): ErrorDetail[] {
      return validate(payload) ? [] : detailsOf(validate.errors ?? [], "payload");
    },
  });
}

function compileNode(node: NodeDefinition): CompiledNode {
  const id = node.id;
  switch (node.type) {
    case "rules":
      return {
        id,
        type: "rules",
        rules: node.rules.map((r) => ({ when: compileCondition(id, r.when), next: r.next })),
        default: node.default,
      };
    case "decision":
      return {
        id,
        type: "decision",
        decision: node.decision,
        cases: (node.cases ?? []).map((c) => ({ when: compileCondition(id, c.when), decision: c.decision })),
        default: node.default,
        output: compileOutput(id, node.output),
      };
    case "score":
      return {
        id,
        type: "score",
        rules: node.rules.map((r) => ({ when: compileCondition(id, r.when), points: r.points })),
        bands: [...node.bands].sort((a, b) => b.minScore - a.minScore),
        output: compileOutput(id, node.output),
      };
    case "notify":
      return {
        id,
        type: "notify",
        payloadType: node.payloadType,
        tag: node.tag,
        webhookKey: node.webhookKey,
        output: compileOutput(id, node.output),
        next: node.next,
      };
    case "external_callback":
      return {
        id,
        type: "external_callback",
        payload: compileOutput(id, node.payload),
        webhookKey: node.webhookKey,
        expiresInSeconds: node.expiresInSeconds ?? LIMITS.defaultCallbackExpiresInSeconds,
        next: node.next,
        onTimeout: node.onTimeout,
      };
    case "information_request":
      return {
        id,
        type: "information_request",
        to: compileText(id, node.to),
        subject: compileText(id, node.subject),
        body: compileText(id, node.body),
        cc: node.cc,
        templateId: node.templateId,
        webhookKey: node.webhookKey,
        awaitResponse: node.awaitResponse === true,
        expiresInSeconds: node.expiresInSeconds,
        next: node.next,
        onExpired: node.onExpired,
        onCancelled: node.onCancelled,
      };
    case "provider":
      return {
        id,
        type: "provider",
        provider: node.provider,
        config: node.config ?? {},
        next: node.next,
        onTimeout: node.onTimeout,
      };
  }
}
