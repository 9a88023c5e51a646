/**
 * The workflow language (contract section 4): the JSON a version is created from, and the
 * compiled form the engine runs. A definition is validated and compiled once per version; a
 * version never changes after creation, so its compiled form may be cached by any process.
 */

// ---------------------------------------------------------------------------------------------
// Definitions, as operators write them.

export interface WorkflowDefinition {
  name?: string;
  description?: string;
  /** JSON Schema 2020-12 that a case's `payload` must satisfy. */
  inputSchema: Record<string, unknown>;
  start: string;
  nodes: NodeDefinition[];
}

/**
 * A node: its `id`, its `type`, and the fields of its type (the node types are registered
 * modules, see node-type.ts; each declares its own definition).
 */
export interface NodeDefinition {
  id: string;
  type: string;
  description?: string;
  [field: string]: unknown;
}

// ---------------------------------------------------------------------------------------------
// Compiled form, as the engine runs it.

/** What expressions read. `nodes` holds the output of every node finished so far, by id. */
export interface ExpressionVariables {
  payload: Record<string, unknown>;
  subject: Record<string, unknown>;
  metadata: Record<string, unknown>;
  case: { id: string; type: string; externalCustomerId: string | null };
  customer: { attributes: Record<string, unknown> };
  nodes: Record<string, unknown>;
}

/** An expression evaluation that failed at run time (a missing key, a type mismatch…). */
export class ExpressionError extends Error {
  constructor(
    readonly nodeId: string,
    readonly expression: string,
    message: string,
  ) {
    super(`node ${nodeId}: expression \`${expression}\` failed: ${message}`);
    this.name = "ExpressionError";
  }
}

export interface CompiledExpression {
  readonly source: string;
  /**
   * Evaluates against the variables; throws ExpressionError. Values come back as plain JSON.
   * An information request's `to`, `subject` and `body` always give strings (else ExpressionError).
   */
  evaluate(variables: ExpressionVariables): unknown;
}

/** A boolean condition: evaluating to anything but a boolean is an ExpressionError. */
export interface CompiledCondition {
  readonly source: string;
  test(variables: ExpressionVariables): boolean;
}

/** A map of named expressions, evaluated together into a plain object. */
export interface CompiledOutput {
  readonly keys: readonly string[];
  evaluate(variables: ExpressionVariables): Record<string, unknown>;
}

/** A compiled node: its id, its type, and whatever its node type compiled it to. */
export interface CompiledNode {
  readonly id: string;
  readonly type: string;
}
