import type { AppContext } from "../../platform/context.js";
import type { Executor, Tx } from "../../platform/db/index.js";
import type { ErrorDetail } from "../../platform/errors.js";
import type { DecisionSource, DecisionValue } from "../case-model/index.js";
import type { NewEvent } from "../webhooks/index.js";
import { pathOf } from "./json-schema.js";
import type { ExpressionKind } from "./workflow.expressions.js";
import type { CompiledNode, ExpressionVariables } from "./workflow.types.js";

export type { CompiledNode };

/**
 * A node type of the workflow language, whole: its definition schema, what the validator checks
 * beyond it, how it compiles, what running it does, how a pause of it resumes, and how its trace
 * entry reads in words. The workflows module validates and compiles definitions through this
 * interface and the engine runs nodes through it; neither knows any node type by name. A feature
 * adds a node type by listing it on its feature (`nodeTypes`); a process's catalogue (`NodeTypes`)
 * is built from the features' lists and passed in the app context (decisions 0011 and 0020).
 */
export interface NodeType<C extends CompiledNode = CompiledNode> {
  readonly type: string;
  /**
   * What running the node touches. `none`: nothing but the case's variables (rules, score,
   * decision). `transaction`: rows written in the step's transaction (events, information
   * requests, waits). `external`: a call outside the service (a vendor over HTTP); `call` makes
   * it before the step's transaction, so no case lock is held while it waits on the network.
   * A step runs consecutive `none` and `transaction` nodes in one transaction; an `external`
   * node starts a step of its own.
   */
  readonly effects: "none" | "transaction" | "external";
  readonly definition: NodeDefinitionSchema;
  /** The fields that name the node to go on with, each a path and the node it names. */
  references(node: JsonObject, at: string): NodeReference[];
  /** Every expression of the node: where it is and what it must give. */
  expressions(node: JsonObject, at: string): NodeExpression[];
  /** Rules the schema cannot state (one field excluding another…), as problems at their paths. */
  check?(node: JsonObject, at: string, problems: ErrorDetail[]): void;
  /**
   * What the node needs of its tenant before a version runs (a provider node's broker
   * configured): a problem refuses publishing and dry runs of the version with 400.
   */
  checkTenant?(node: C, input: { db: Executor; tenantId: string }): Promise<string | undefined>;
  /** A definition that passed validation, compiled once per version: expressions parsed and checked. */
  compile(node: JsonObject & { id: string }): C;
  /** An `external` node's call, outside any transaction. Its result reaches `evaluate` as `called`. */
  call?(node: C, input: NodeCallInput): Promise<unknown>;
  /**
   * Whether a backtest may run `evaluate` with `replay` set (contract section 8): then it writes
   * nothing itself, calls nobody, and answers what came from outside the case from
   * `replay.step`, throwing `ReplayNeedsInput` when the record does not have it. A node type
   * whose effects are `none` replays as it runs; one with effects that does not say so cannot be
   * replayed (the case's replay ends in an error naming it).
   */
  readonly replays?: true;
  /** What the node decided, applied by the engine in the step's transaction. */
  evaluate(node: C, input: NodeInput): NodeOutcome | Promise<NodeOutcome>;
  /** A paused node's wait was resolved: where the workflow goes, or that the node keeps waiting. */
  resume?(node: C, resolution: WaitResolution, wait: OpenWait): ResumeOutcome;
  /**
   * How an open wait of the node shows on `GET /cases/{caseId}/pending` (a node paused on an
   * external system, with the actions it offers); absent or undefined: not listed there.
   */
  pending?(node: C, wait: OpenWait): PendingView | undefined;
  /**
   * The trace entry in words, one line per fact (`cds case show`); `definition` is the node as
   * its version defines it, when the caller has it, to quote the rule that held.
   */
  describe(entry: TraceEntry, definition?: JsonObject): string[];
}

export type JsonObject = Record<string, unknown>;

export interface NodeDefinitionSchema {
  /** One sentence for the JSON Schema and docs. */
  description: string;
  /** Required properties besides `id` and `type`. */
  required: string[];
  /**
   * JSON Schema of each property besides `id`, `type` and `description`. Shared definitions are
   * referenced with `schemaRef("nodeRef")`, `schemaRef("expression")`, `schemaRef("output")`…
   */
  properties: Record<string, unknown>;
}

export interface NodeReference {
  path: string;
  target: string;
}

export interface NodeExpression {
  path: string;
  source: string;
  kind: ExpressionKind;
  /** May read this node's own output (a score node's `output` reads `nodes.<id>.score`). */
  readsOwnNode?: boolean;
}

/** The case as a node sees it. */
export interface NodeCase {
  id: string;
  tenantId: string;
  type: string;
  externalCustomerId: string | null;
  dryRun: boolean;
  subject: JsonObject;
  /** The case's own time: its eventTimestamp, else when it was created. */
  time: Date;
  /** When the case was accepted (created). */
  createdAt: Date;
}

export interface NodeCallInput {
  ctx: AppContext;
  case: NodeCase;
  vars: ExpressionVariables;
  seq: number;
}

export interface NodeInput extends NodeCallInput {
  /** The step's transaction, holding the case lock. A `none` node never uses it. */
  tx: Tx;
  /** What `call` returned (external nodes only). */
  called?: unknown;
  /**
   * Set when a backtest replays a past case through the node (see `replays`): `tx` is then a
   * plain reader, not a transaction.
   */
  replay?: NodeReplay;
}

/** What a backtest gives a node it replays: the node's own record in the past case. */
export interface NodeReplay {
  /** The step this node (the same id and type) recorded when the case ran; undefined if it never ran. */
  step: RecordedStep | undefined;
  /** Reads what the case never computed (a new figure), as of the case's own time. Never writes. */
  db: Executor;
}

/** A step of a past case, as a backtest replays a node from it. */
export interface RecordedStep {
  seq: number;
  status: "completed" | "waiting" | "failed";
  output: unknown;
  /** The node type's facts: `figures`, `lists`, `attributes`, a provider's `calls`… */
  explain: JsonObject | null;
  next: string | null;
  error: string | null;
  /** The wait the node opened, and how it ended (`resolution` null while it is open). */
  wait?: OpenWait & { resolution: string | null };
}

/** A replayed node needs an input the past case never had (a new external node): its replay ends. */
export class ReplayNeedsInput extends Error {
  constructor(readonly nodeId: string) {
    super(`node ${nodeId} needs an input the case never had`);
    this.name = "ReplayNeedsInput";
  }
}

/**
 * Per-type facts of the trace entry (contract section 4, "Trace"): `matched` for rules and
 * decisions, `score`, `contributions` and `band` for scores, `brokerId` and calls for providers.
 */
export type Explanation = Record<string, unknown>;

export type NodeOutcome =
  | {
      kind: "continue";
      next: string;
      /** Visible to later nodes as `nodes.<id>`. */
      output: unknown;
      events?: NewEvent[];
      explain?: Explanation;
    }
  | {
      kind: "decide";
      decision: DecisionValue;
      source: Exclude<DecisionSource, "analyst">;
      /** Becomes `result.workflow_result`. */
      result: Record<string, unknown>;
      output: unknown;
      explain?: Explanation;
    }
  | {
      kind: "wait";
      wait: WaitSpec;
      /** Recorded on the waiting step; the node's output comes when it resumes. */
      output?: unknown;
      events?: NewEvent[];
      explain?: Explanation;
    }
  | { kind: "fail"; message: string; output?: unknown; explain?: Explanation };

/** A pause of a node, of the node type's own kind, resolved later through `resumeWait`. */
export interface WaitSpec {
  /** Chosen by the node when it must name the wait before it exists (a pending handle); else new. */
  id?: string;
  /** The node type's own kind of wait: `callback`, `rfi`, `provider`… */
  kind: string;
  /** What finds the wait again: a callback reference, an information request id, a vendor's id. */
  ref: string | null;
  expiresAt: Date | null;
  /**
   * Whether the engine resolves the wait as `timeout` at `expiresAt` (through `resume`). False
   * when something else owns the deadline (an information request expires by itself).
   */
  timesOut: boolean;
  /** Shown on `GET /cases/{caseId}/pending` as `providerId`. */
  providerId?: string | null;
  /** Node-specific state kept with the wait (offered actions…). */
  data?: JsonObject;
}

/** How a wait was resolved: `timeout`, or what its node type reports (`callback`, `answered`…). */
export interface WaitResolution {
  kind: string;
  /** The resolution's data (a callback body, an answer, a vendor's result). */
  output?: unknown;
}

export interface OpenWait {
  id: string;
  kind: string;
  ref: string | null;
  expiresAt: Date | null;
  data: JsonObject | null;
}

export interface PendingView {
  providerId: string | null;
  availableActions: Array<{ id: string; label: string; resolvesAwait: boolean }>;
}

export type ResumeOutcome =
  | { kind: "continue"; next: string; output: unknown; explain?: Explanation }
  | { kind: "fail"; message: string; output?: unknown; explain?: Explanation }
  /** The node keeps waiting (a vendor asked for a retry): the wait stays open. */
  /** Its events are the case's: the engine marks them dry run with it. */
  | { kind: "keep_waiting"; events?: Array<Omit<NewEvent, "dryRun">> };

/** One entry of a case's trace, as `GET /admin/cases/{caseId}` shows it. */
export interface TraceEntry {
  seq: number;
  nodeId: string;
  nodeType: string;
  status: "completed" | "waiting" | "failed";
  startedAt: string;
  finishedAt: string | null;
  output: unknown;
  next: string | null;
  error?: { message: string };
  [fact: string]: unknown;
}

// ---------------------------------------------------------------------------------------------
// The registry: built once per process from the features' lists (`nodeTypes` on each feature)
// and passed in the app context, never filled by a module's import.

/** The node types a process knows, and what is derived from them (schema, validator, compiled versions). */
export class NodeTypes {
  readonly #types = new Map<string, NodeType>();
  readonly #derived = new Map<string, unknown>();

  constructor(types: Iterable<NodeType>) {
    for (const t of types) {
      if (this.#types.has(t.type)) throw new Error(`node type ${t.type} is listed twice`);
      this.#types.set(t.type, t);
    }
  }

  /** The node type of that name, or undefined when no feature lists it. */
  of(type: string): NodeType | undefined {
    return this.#types.get(type);
  }

  /** The node type of a compiled node; a missing one means its feature is not in this process. */
  require(type: string): NodeType {
    const found = this.#types.get(type);
    if (!found) throw new Error(`node type ${type} is not known`);
    return found;
  }

  all(): NodeType[] {
    return [...this.#types.values()];
  }

  /** A value computed from the node types once, then kept with them. */
  derived<T>(name: string, make: () => T): T {
    if (!this.#derived.has(name)) this.#derived.set(name, make());
    return this.#derived.get(name) as T;
  }
}

// ---------------------------------------------------------------------------------------------
// Helpers for node types.

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A `$ref` to a shared definition of the workflow schema. */
export function schemaRef(name: string): { $ref: string } {
  return { $ref: `#/$defs/${name}` };
}

/** The references held by plain fields (`next`, `onTimeout`…) that name a node. */
export function fieldReferences(node: JsonObject, at: string, fields: readonly string[]): NodeReference[] {
  const refs: NodeReference[] = [];
  for (const field of fields) {
    const target = node[field];
    if (typeof target === "string") refs.push({ path: `${at}.${field}`, target });
  }
  return refs;
}

/** The `when` conditions of a list of clauses (`rules`, `cases`). */
export function clauseConditions(node: JsonObject, at: string, field: string): NodeExpression[] {
  const list = node[field];
  if (!Array.isArray(list)) return [];
  const found: NodeExpression[] = [];
  list.forEach((item, j) => {
    if (isJsonObject(item) && typeof item.when === "string" && item.when.trim() !== "")
      found.push({ path: `${at}.${field}[${j}].when`, source: item.when, kind: "condition" });
  });
  return found;
}

/** The entries of a map of named expressions (`output`, `payload`). */
export function mapExpressions(node: JsonObject, at: string, field: string): NodeExpression[] {
  const entries = node[field];
  if (!isJsonObject(entries)) return [];
  const found: NodeExpression[] = [];
  for (const [key, source] of Object.entries(entries)) {
    if (typeof source === "string" && source.trim() !== "")
      found.push({ path: pathOf(`${at}.${field}`, "", key), source, kind: "value" });
  }
  return found;
}

/** `describe` helpers: the common lines of every entry. */
export function describeEnd(entry: TraceEntry): string[] {
  if (entry.status === "failed") return [`failed: ${entry.error?.message ?? "unknown error"}`];
  if (entry.status === "waiting") return ["waiting"];
  return entry.next ? [`went on to ${entry.next}`] : [];
}

/** Problems found while validating, re-exported for node types' `check`. */
export type { ErrorDetail };

/** A node whose expressions gave something it cannot use; fails the case like an ExpressionError. */
export class NodeEvaluationError extends Error {
  constructor(
    readonly nodeId: string,
    message: string,
  ) {
    super(`node ${nodeId}: ${message}`);
    this.name = "NodeEvaluationError";
  }
}
