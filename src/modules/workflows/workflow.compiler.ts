import type { ErrorDetail } from "../../platform/errors.js";
import { compileInputSchema, detailsOf } from "./json-schema.js";
import { type CompiledNode, requireNodeType } from "./node-type.js";
import type { CompiledWorkflow, WorkflowDefinition } from "./workflow.types.js";

export interface VersionKey {
  tenantId: string;
  workflowId: string;
  version: number;
}

/**
 * Compiles a stored (so already validated) definition into what the engine runs: each node by
 * its node type (expressions parsed and type-checked once), the input schema compiled once.
 */
export function compileWorkflow(key: VersionKey, definition: WorkflowDefinition): CompiledWorkflow {
  const nodes = new Map<string, CompiledNode>();
  for (const node of definition.nodes) nodes.set(node.id, requireNodeType(node.type).compile(node));
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
