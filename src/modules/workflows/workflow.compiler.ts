import type { ErrorDetail } from "../../platform/errors.js";
import { validateOnThread } from "./evaluation-threads.js";
import { compileInputSchema, INLINE_SCHEMA_WORK, ON_THREAD, validateBounded } from "./json-schema.js";
import type { CompiledNode, NodeTypes } from "./node-type.js";
import type { WorkflowDefinition } from "./workflow.types.js";
import { readsOf } from "./workflow.validator.js";

export interface CompiledWorkflow {
  /** The node types it was compiled with, which run its nodes. */
  readonly nodeTypes: NodeTypes;
  readonly tenantId: string;
  readonly workflowId: string;
  readonly version: number;
  readonly definition: WorkflowDefinition;
  readonly start: string;
  readonly nodes: ReadonlyMap<string, CompiledNode>;
  /** The tenant's lists its expressions read with `inList`. */
  readonly lists: readonly string[];
  /**
   * Whether an expression names `customer`: a case of a version that never does runs without
   * its customer's attributes being read.
   */
  readonly readsCustomer: boolean;
  /**
   * Checks a case payload against `inputSchema`: every failing path, relative to the submission
   * body (`payload.amount`, `payload.items[0].sku`); empty when valid. A payload whose patterns
   * need more work than the event loop allows is checked on a thread, within `deadlineMs`.
   */
  validatePayload(payload: unknown, deadlineMs: number): Promise<ErrorDetail[]>;
}

export interface VersionKey {
  tenantId: string;
  workflowId: string;
  version: number;
}

/**
 * Compiles a stored (so already validated) definition into what the engine runs: each node by
 * its node type (expressions parsed and type-checked once), the input schema compiled once.
 */
export function compileWorkflow(
  types: NodeTypes,
  key: VersionKey,
  definition: WorkflowDefinition,
): CompiledWorkflow {
  const nodes = new Map<string, CompiledNode>();
  for (const node of definition.nodes) nodes.set(node.id, types.require(node.type).compile(node));
  const validate = compileInputSchema(definition.inputSchema);
  const reads = readsOf(types, definition);
  return Object.freeze({
    nodeTypes: types,
    tenantId: key.tenantId,
    workflowId: key.workflowId,
    version: key.version,
    definition,
    start: definition.start,
    nodes,
    lists: [...new Set(reads.lists.map((r) => r.list))],
    readsCustomer: reads.readsCustomer,
    async validatePayload(payload: unknown, deadlineMs: number): Promise<ErrorDetail[]> {
      const inline = validateBounded(validate, payload, "payload", INLINE_SCHEMA_WORK);
      if (inline !== ON_THREAD) return inline;
      const version = `${key.tenantId}/${key.workflowId}/${key.version}`;
      return validateOnThread(key.tenantId, { version, schema: definition.inputSchema, payload }, deadlineMs);
    },
  });
}
