import type { ErrorDetail } from "../../platform/errors.js";
import type { DecisionValue } from "../cases/case-status.js";

/**
 * The workflow language (contract section 4): the JSON a version is created from, and the
 * compiled form the engine runs. A definition is validated and compiled once per version; a
 * version never changes after creation, so its compiled form may be cached by any process.
 */

// ---------------------------------------------------------------------------------------------
// Definitions, as operators write them. Every string typed `Expression` is CEL source.

export type Expression = string;

export interface WorkflowDefinition {
  name?: string;
  description?: string;
  /** JSON Schema 2020-12 that a case's `payload` must satisfy. */
  inputSchema: Record<string, unknown>;
  start: string;
  nodes: NodeDefinition[];
}

export type NodeDefinition =
  | RulesNodeDefinition
  | DecisionNodeDefinition
  | ScoreNodeDefinition
  | NotifyNodeDefinition
  | ExternalCallbackNodeDefinition
  | InformationRequestNodeDefinition
  | ProviderNodeDefinition;

export type NodeType = NodeDefinition["type"];

interface NodeBase {
  id: string;
  description?: string;
}

/** Rules in order, the first whose `when` holds picks `next`; else `default`. */
export interface RulesNodeDefinition extends NodeBase {
  type: "rules";
  rules: Array<{ when: Expression; next: string }>;
  default: string;
}

/** Ends the workflow with a fixed `decision`, or the first matching case's, else `default`. */
export interface DecisionNodeDefinition extends NodeBase {
  type: "decision";
  decision?: DecisionValue;
  cases?: Array<{ when: Expression; decision: DecisionValue }>;
  default?: DecisionValue;
  /** Becomes `result.workflow_result`. */
  output?: Record<string, Expression>;
}

/** Sums the points of every true rule; the band with the highest `minScore` not above it decides. */
export interface ScoreNodeDefinition extends NodeBase {
  type: "score";
  rules: Array<{ when: Expression; points: number }>;
  bands: Array<{ minScore: number; decision: DecisionValue }>;
  /** Becomes `result.workflow_result`; may read `nodes.<thisId>.score`. */
  output?: Record<string, Expression>;
}

/** Emits `node.notification` and goes on. */
export interface NotifyNodeDefinition extends NodeBase {
  type: "notify";
  payloadType?: string;
  tag?: string;
  webhookKey?: string;
  output: Record<string, Expression>;
  next: string;
}

/** Emits `external_callback.dispatch` and pauses until the callback, or the expiry. */
export interface ExternalCallbackNodeDefinition extends NodeBase {
  type: "external_callback";
  payload?: Record<string, Expression>;
  webhookKey?: string;
  /** Default 86,400 (one day). */
  expiresInSeconds?: number;
  next: string;
  /** Taken when the callback does not come in time; without it the case fails. */
  onTimeout?: string;
}

/** Raises an RFI; with `awaitResponse` pauses until it is answered, cancelled or expires. */
export interface InformationRequestNodeDefinition extends NodeBase {
  type: "information_request";
  to: Expression;
  subject: Expression;
  body: Expression;
  /** Literal addresses. */
  cc?: string[];
  templateId?: string;
  webhookKey?: string;
  awaitResponse?: boolean;
  /** The answer deadline; required with `awaitResponse`. */
  expiresInSeconds?: number;
  next: string;
  /** Without it, an expired request fails the case. */
  onExpired?: string;
  /** Without it, a cancelled request fails the case. */
  onCancelled?: string;
}

/** Runs a verification provider (broker). Accepted by the validator; runs with a later feature. */
export interface ProviderNodeDefinition extends NodeBase {
  type: "provider";
  provider: string;
  config?: Record<string, unknown>;
  next: string;
  onTimeout?: string;
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

export type CompiledNode =
  | { id: string; type: "rules"; rules: Array<{ when: CompiledCondition; next: string }>; default: string }
  | {
      id: string;
      type: "decision";
      decision: DecisionValue | undefined;
      cases: Array<{ when: CompiledCondition; decision: DecisionValue }>;
      default: DecisionValue | undefined;
      output: CompiledOutput;
    }
  | {
      id: string;
      type: "score";
      rules: Array<{ when: CompiledCondition; points: number }>;
      /** Sorted by minScore, highest first. */
      bands: Array<{ minScore: number; decision: DecisionValue }>;
      output: CompiledOutput;
    }
  | {
      id: string;
      type: "notify";
      payloadType: string | undefined;
      tag: string | undefined;
      webhookKey: string | undefined;
      output: CompiledOutput;
      next: string;
    }
  | {
      id: string;
      type: "external_callback";
      payload: CompiledOutput;
      webhookKey: string | undefined;
      expiresInSeconds: number;
      next: string;
      onTimeout: string | undefined;
    }
  | {
      id: string;
      type: "information_request";
      to: CompiledExpression;
      subject: CompiledExpression;
      body: CompiledExpression;
      cc: string[] | undefined;
      templateId: string | undefined;
      webhookKey: string | undefined;
      awaitResponse: boolean;
      expiresInSeconds: number | undefined;
      next: string;
      onExpired: string | undefined;
      onCancelled: string | undefined;
    }
  | {
      id: string;
      type: "provider";
      provider: string;
      config: Record<string, unknown>;
      next: string;
      onTimeout: string | undefined;
    };

export interface CompiledWorkflow {
  readonly tenantId: string;
  readonly workflowId: string;
  readonly version: number;
  readonly definition: WorkflowDefinition;
  readonly start: string;
  readonly nodes: ReadonlyMap<string, CompiledNode>;
  /**
   * Checks a case payload against `inputSchema`: every failing path, relative to the submission
   * body (`payload.amount`, `payload.items[0].sku`); empty when valid.
   */
  validatePayload(payload: unknown): ErrorDetail[];
}
