import { Environment, type ParseResult } from "@marcbachmann/cel-js";
import type { RE2JS } from "re2js";
import { compilePattern, matchWork, REGEX_LIMITS } from "./regex.js";
import {
  type CompiledCondition,
  type CompiledExpression,
  type CompiledOutput,
  ExpressionError,
  type ExpressionVariables,
} from "./workflow.types.js";

/**
 * CEL as workflows use it (docs/workflows.md, "Expressions").
 *
 * Numbers: a JSON number (every number in payload, subject, metadata, customer attributes and
 * node outputs) is a CEL `double`, as in CEL's own JSON mapping, whatever its digits: 1500 and
 * 1500.5 behave alike, so a rule never depends on whether a partner sent a fraction. CEL
 * compares int and double naturally (`payload.amount > 1000`, `payload.n == 3`); this
 * environment also defines `+ - * /` between int and double (the result is a double), which
 * plain CEL refuses, so that `payload.amount * 2 > 3000` and `payload.amount + 100` work.
 * Integer literals among themselves keep CEL's int arithmetic (`7 / 2 == 3`).
 *
 * Results come back as plain JSON: ints as numbers (refused beyond ±2^53), maps as objects,
 * timestamps as RFC 3339 strings; bytes, durations, types and non-finite doubles are
 * expression errors.
 *
 * Bounds (decision 0013): every evaluation is metered (one unit per expression node evaluated,
 * more for long strings and lists), and the expressions of one node evaluation share one budget;
 * past it the expression fails, and so does the case. `matches()` runs on RE2 (linear time).
 */

/** Units one node evaluation may spend by default (about 2 ms of one core; see decision 0013). */
export const EVALUATION_BUDGET = 50_000;

/** Units one node evaluation may spend in this process (`CDS_EVALUATION_BUDGET`). */
let nodeBudget = EVALUATION_BUDGET;

/** Sets the units one node evaluation may spend in this process (the configuration's, at start). */
export function setEvaluationBudget(units: number): void {
  nodeBudget = units;
}

const environment = new Environment({ homogeneousAggregateLiterals: false })
  .registerVariable("payload", "map", { description: "The case payload" })
  .registerVariable("subject", "map", { description: "The case subject" })
  .registerVariable("metadata", "map", { description: "The case metadata" })
  .registerVariable({
    name: "case",
    schema: { id: "string", type: "string", externalCustomerId: "dyn" },
    description: "The case: id, type and externalCustomerId (a string or null)",
  })
  .registerVariable({
    name: "customer",
    schema: { attributes: "map" },
    description: "The customer of the case's external customer id",
  })
  .registerVariable("nodes", "map", { description: "The output of every finished node, by node id" })
  .registerFunction("inList(string, string): bool", (list: string, value: string) => inList(list, value), {
    description: "Whether the value is in the tenant's named list (normalised as the list says)",
  });

const MIXED: Record<string, (a: number, b: number) => number> = {
  "+": (a, b) => a + b,
  "-": (a, b) => a - b,
  "*": (a, b) => a * b,
  "/": (a, b) => a / b,
};
for (const [op, apply] of Object.entries(MIXED)) {
  environment.registerOperator(`double ${op} int: double`, (a: number, b: bigint) => apply(a, Number(b)));
  environment.registerOperator(`int ${op} double: double`, (a: bigint, b: number) => apply(Number(a), b));
}

/** What an expression must produce where it stands. */
export type ExpressionKind = "condition" | "string" | "value";

/** Static types that no JSON value has. */
const NOT_JSON = /\b(bytes|google\.protobuf\.Duration|type|optional)\b/;

export type CheckedExpression =
  | {
      ok: true;
      program: ParseResult;
      type: string;
      nodeRefs: string[];
      listRefs: string[];
      /** Whether it names the variable `customer` (and so may read the customer's attributes). */
      readsCustomer: boolean;
    }
  | { ok: false; message: string };

function located(summary: string, range: { start: number } | undefined): string {
  return range ? `${summary} (at character ${range.start + 1})` : summary;
}

/** Parses and type-checks an expression against the declared variables. */
export function checkExpression(source: string, kind: ExpressionKind): CheckedExpression {
  let program: ParseResult;
  try {
    program = environment.parse(source);
  } catch (err) {
    const e = err as { summary?: string; message: string; range?: { start: number } };
    return { ok: false, message: `does not compile: ${located(e.summary ?? e.message, e.range)}` };
  }
  const checked = program.check();
  if (!checked.valid || !checked.type) {
    const e = checked.error;
    return {
      ok: false,
      message: `does not type-check: ${e ? located(e.summary ?? e.message, e.range) : "unknown type"}`,
    };
  }
  const type = checked.type;
  if (kind === "condition" && type !== "bool" && type !== "dyn") {
    return { ok: false, message: `must be a boolean condition, but its type is ${type}` };
  }
  if (kind === "string" && type !== "string" && type !== "dyn") {
    return { ok: false, message: `must be a string, but its type is ${type}` };
  }
  if (NOT_JSON.test(type)) {
    return { ok: false, message: `has type ${type}, which has no JSON form; convert it with string()` };
  }
  const badPattern = literalPatternProblem(program.ast) ?? literalDurationProblem(program.ast);
  if (badPattern) return { ok: false, message: `does not compile: ${badPattern}` };
  const lists = listReferences(program.ast);
  if (typeof lists === "string") return { ok: false, message: `does not compile: ${lists}` };
  return {
    ok: true,
    program,
    type,
    nodeRefs: nodeReferences(program.ast),
    listRefs: lists,
    readsCustomer: allNodes(program.ast).some((node) => node.op === "id" && node.args === "customer"),
  };
}

interface AstLike {
  op: string;
  args: unknown;
}

function isAst(value: unknown): value is AstLike {
  return typeof value === "object" && value !== null && typeof (value as AstLike).op === "string";
}

/** The node ids an expression reads as `nodes.<id>` or `nodes["<id>"]`. */
function nodeReferences(ast: unknown): string[] {
  const found = new Set<string>();
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) {
      for (const v of value) visit(v);
      return;
    }
    if (!isAst(value)) return;
    const args = value.args;
    if (Array.isArray(args) && isAst(args[0]) && args[0].op === "id" && args[0].args === "nodes") {
      if ((value.op === "." || value.op === ".?") && typeof args[1] === "string") found.add(args[1]);
      if ((value.op === "[]" || value.op === "[?]") && isAst(args[1]) && args[1].op === "value") {
        if (typeof args[1].args === "string") found.add(args[1].args);
      }
    }
    visit(args);
  };
  visit(ast);
  return [...found];
}

function describe(value: unknown): string {
  if (value === undefined) return "nothing";
  if (typeof value === "object" && value !== null) return value.constructor?.name ?? "object";
  return typeof value;
}

function setKey(target: Record<string, unknown>, key: string, value: unknown): void {
  // A CEL map may carry "__proto__" as an ordinary key; it must stay data.
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** A CEL value as plain JSON; throws for what JSON cannot hold. */
export function toJson(value: unknown): unknown {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      if (!Number.isFinite(value)) throw new Error(`the result ${value} is not a finite number`);
      return value;
    case "bigint":
      if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) {
        throw new Error(`the integer ${value} is beyond ±2^53, which JSON numbers do not hold exactly`);
      }
      return Number(value);
  }
  if (value === null) return null;
  if (Array.isArray(value)) return value.map(toJson);
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Map) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of value) {
      if (typeof k !== "string") throw new Error(`a map key ${String(k)} is not a string`);
      setKey(out, k, toJson(v));
    }
    return out;
  }
  if (typeof value === "object") {
    const proto = Object.getPrototypeOf(value);
    if (proto === Object.prototype || proto === null) {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) setKey(out, k, toJson(v));
      return out;
    }
    // An unsigned int (`1u`) is an object around a bigint.
    const primitive = (value as { valueOf(): unknown }).valueOf();
    if (typeof primitive === "bigint") return toJson(primitive);
  }
  throw new Error(`a ${describe(value)} value has no JSON form; convert it with string()`);
}

function failure(err: unknown): string {
  const e = err as { summary?: string; message?: string };
  return e.summary ?? e.message ?? String(err);
}

function program(source: string, kind: ExpressionKind): (variables: ExpressionVariables) => unknown {
  const checked = checkExpression(source, kind);
  if (!checked.ok) throw new Error(`expression \`${source}\` ${checked.message}`);
  meter(checked.program.ast);
  const run = checked.program;
  return (variables) =>
    metered(variables, kind, source, () =>
      finish(kind, run(variables as unknown as Record<string, unknown>)),
    );
}

/** An expression's result as what it must give where it stands: JSON, a string, a boolean. */
function finish(kind: ExpressionKind, result: unknown): unknown {
  if (kind === "value") return toJson(result);
  const type = kind === "string" ? "string" : "boolean";
  if (typeof result !== type) {
    throw new Error(
      `the ${kind === "string" ? "expression" : "condition"} gave ${describe(result)}, not a ${type}`,
    );
  }
  return result;
}

// --- Metering -------------------------------------------------------------------------------

class BudgetExceeded extends Error {
  constructor() {
    super(
      `exceeded the evaluation budget of ${nodeBudget} units for one node ` +
        "(comprehensions over large lists, or very long strings)",
    );
  }
}

/**
 * Units the expressions of one node evaluation may spend on the event loop, and wall-clock time
 * they may take there, before their evaluation moves to a thread with a deadline (decision
 * 0024). Ordinary expressions spend tens of units; a `matches()` charged more than this, a
 * comprehension over a long list, or anything slower than estimated, goes to a thread.
 */
export const INLINE_UNITS = 5_000;
const INLINE_MS = 5;
/**
 * Strings and lists longer than these are never handled on the event loop: built-in functions
 * are charged one unit a call, and some cost far more than linear time in their input (cel-js's
 * `duration()` parses with a backtracking regular expression), so the estimate is trusted there
 * only for short values.
 */
const INLINE_TEXT = 128;
const INLINE_LIST = 1_024;

interface Meter {
  left: number;
  /** Units left before the evaluation moves to a thread (infinite where it cannot). */
  inlineLeft: number;
  started: number;
  ticks: number;
  /** Where an evaluation that needs a thread records it; undefined on a thread, or where none is offered. */
  offloads: Offloads | undefined;
  /** Set when the evaluation passed its inline allowance: it ends with `ThreadNeeded`. */
  overflow: boolean;
}

/** One budget per evaluation of a node: the engine builds one variables object for it. */
const meters = new WeakMap<object, Meter>();
let current: Meter | undefined;

function newMeter(left: number, offloads: Offloads | undefined): Meter {
  const inlineLeft = offloads ? INLINE_UNITS : Number.POSITIVE_INFINITY;
  return { left, inlineLeft, started: performance.now(), ticks: 0, offloads, overflow: false };
}

/**
 * An error that steers an evaluation (ask for lookups, move to a thread), not a failure: made
 * without a stack trace, which V8 would otherwise capture through every frame of the evaluation
 * (1.5 % of a busy service's time, once per node that reads a list).
 */
class Signal extends Error {
  constructor(message?: string) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
  }
}

class InlineAllowanceSpent extends Signal {}

function spend(units: number): void {
  if (!current) return;
  // Spent already: a comprehension that absorbed the error goes no further (see spent()).
  if (current.overflow) throw new InlineAllowanceSpent();
  current.left -= units;
  current.inlineLeft -= units;
  if (current.left < 0) throw new BudgetExceeded();
  if (!current.offloads) return;
  if (
    current.inlineLeft < 0 ||
    ((++current.ticks & 63) === 0 && performance.now() - current.started > INLINE_MS)
  ) {
    current.overflow = true;
    throw new InlineAllowanceSpent();
  }
}

/**
 * Whether the running evaluation has spent its budget or its inline allowance. CEL's `all()` and
 * `exists()` absorb an error of one element and go on with the next (an error stands only if no
 * element settles the answer): without this, the budget's error would be thrown again, and
 * absorbed again, for every remaining element, nested comprehensions multiplying it (10,000
 * elements over 10,000 held a thread for 70 to 250 ms after the budget ran out). A spent
 * evaluation's comprehensions stop at their next element instead; their result is never used,
 * since the evaluation then ends on the budget or moves to a thread.
 */
function spent(): boolean {
  return current !== undefined && (current.left < 0 || current.overflow);
}

/** What a value costs beyond its node: long strings and lists are paid for by size. */
function sizeCost(value: unknown): number {
  if (typeof value === "string") return value.length >>> 6;
  if (Array.isArray(value)) return value.length >>> 3;
  return 0;
}

/** A value too long to handle on the event loop ends an evaluation that may move to a thread. */
function checkInlineSize(value: unknown): void {
  if (!current?.offloads) return;
  const long =
    (typeof value === "string" && value.length > INLINE_TEXT) ||
    (Array.isArray(value) && value.length > INLINE_LIST);
  if (!long) return;
  current.overflow = true;
  throw new InlineAllowanceSpent();
}

function metered<T>(variables: ExpressionVariables, kind: ExpressionKind, source: string, run: () => T): T {
  let m = meters.get(variables);
  if (!m) {
    m = newMeter(nodeBudget, OFFLOADS.of(variables));
    meters.set(variables, m);
  }
  // Evaluated on a thread already (this node evaluation, an earlier attempt): its result stands.
  const done = m.offloads?.result(kind, source);
  if (done) {
    // Read again here what it read there, for whoever watches these variables (the trace's
    // attributes): a property's descriptor is how CEL reads a field.
    const attributes = variables.customer?.attributes;
    for (const key of done.attributeKeys ?? [])
      if (attributes) Object.getOwnPropertyDescriptor(attributes, key);
    m.left -= done.spent;
    if (m.left < 0) throw new BudgetExceeded();
    if ("error" in done) throw new Error(done.error);
    return done.value as T;
  }
  const budgetAtStart = m.left;
  const outer = current;
  const outerLookups = currentLookups;
  current = m;
  currentLookups = LOOKUPS.of(variables);
  const needsThread = () => {
    // A node type may add to `nodes` what its own expressions read (a score node, its score).
    (m.offloads as Offloads).want({ kind, source, budget: budgetAtStart, nodes: variables.nodes });
    return new ThreadNeeded();
  };
  try {
    const result = run();
    // `||` and `&&` absorb errors of one side, the budget's too: an exhausted budget still fails.
    if (m.left < 0) throw new BudgetExceeded();
    if (m.overflow) throw needsThread();
    if (currentLookups?.hasMissing) throw new LookupsNeeded();
    return result;
  } catch (err) {
    if (err instanceof ThreadNeeded || err instanceof BudgetExceeded) throw err;
    if (m.overflow) throw needsThread();
    // An error met while an answer was missing may be the placeholder's doing: look up first.
    if (currentLookups?.hasMissing) throw new LookupsNeeded();
    throw err;
  } finally {
    current = outer;
    currentLookups = outerLookups;
  }
}

type Evaluate = (ev: Evaluator, ast: AstNode, ctx: unknown) => unknown;

interface Evaluator {
  run(ast: AstNode, ctx: unknown): unknown;
}

/** The parts of cel-js's AST node that metering uses; `meta` holds what `check()` settled. */
interface AstNode {
  op: string;
  args: unknown;
  evaluate: Evaluate;
  meta: { evaluate: Evaluate; alternate?: AstNode; macro?: { evaluate: Evaluate } };
}

function isNode(value: unknown): value is AstNode {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as AstNode).op === "string" &&
    "meta" in value
  );
}

/** Every AST node of a checked program, macro expansions included. */
function allNodes(root: unknown): AstNode[] {
  const seen = new Set<unknown>();
  const found: AstNode[] = [];
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value !== "object" || value === null || seen.has(value)) continue;
    seen.add(value);
    if (Array.isArray(value)) {
      stack.push(...value);
    } else if (isNode(value)) {
      found.push(value);
      stack.push(value.args, value.meta.alternate, value.meta.macro);
    } else if (Object.getPrototypeOf(value) === Object.prototype) {
      stack.push(...Object.values(value));
    }
  }
  return found;
}

/**
 * Wraps each node's evaluation with the meter, and runs `matches()` on RE2. cel-js has no cost
 * limit of its own and its `matches()` is the backtracking `RegExp`; both are replaced here on
 * the checked AST, which evaluates through each node's `evaluate`.
 */
function meter(root: unknown): void {
  const nodes = allNodes(root);
  const charges = operandCharges(nodes);
  for (const node of nodes) {
    const meta = node.meta;
    if (meta.alternate) continue;
    const base: Evaluate = meta.macro
      ? (ev, _ast, ctx) => (meta.macro as { evaluate: Evaluate }).evaluate(ev, meta.macro as never, ctx)
      : isMatches(node)
        ? re2Matches(node)
        : (ev, ast, ctx) => meta.evaluate.call(node, ev, ast, ctx);
    const accumulator = node.op === "accuPush" || node.op === "accuValue";
    if (node.op === "comprehension") stopWhenSpent(node.args as Comprehension);
    const charge = charges.get(node);
    node.evaluate = (ev, ast, ctx) => {
      spend(1);
      const result = base(ev, ast, ctx);
      if (!accumulator) {
        spend(sizeCost(result));
        checkInlineSize(result);
      }
      // Paid by an operand for the operation it feeds, before that operation runs.
      if (charge) charge(result);
      return result;
    };
  }
}

/**
 * Built-in operations that cost more than the unit of their node, paid by their operands as
 * they are evaluated (so before the operation runs):
 * - `duration(text)`: cel-js parses it with a backtracking regular expression, cubic in a run of
 *   digits (400 digits took 21 ms): a text is refused past `DURATION_TEXT` characters, and
 *   charged length³ / 64 units (at most 4,096).
 * - `x in list`: a comparison per element, each as deep as `x`: length × (1 + 4 × x's values)
 *   (20,000 two-key maps took 2.9 ms: about 4.7 units an element).
 * - `a == b`, `a != b`: as deep as the smaller side: its values (a scalar none).
 */
function operandCharges(nodes: AstNode[]): Map<AstNode, (value: unknown) => void> {
  const charges = new Map<AstNode, (value: unknown) => void>();
  for (const node of nodes) {
    if (node.op === "call" && Array.isArray(node.args) && node.args[0] === "duration") {
      const text = (node.args as [string, unknown[]])[1]?.[0];
      if (isNode(text)) charges.set(text, chargeDuration);
    } else if (node.op === "in" || node.op === "==" || node.op === "!=") {
      const [left, right] = node.args as [unknown, unknown];
      if (!isNode(left) || !isNode(right)) continue;
      // cel-js evaluates the left operand first: the right one pays, knowing both.
      let leftValue: unknown;
      charges.set(left, (value) => {
        leftValue = value;
      });
      charges.set(
        right,
        node.op === "in"
          ? (value) => {
              if (Array.isArray(value))
                spend(value.length * (1 + 4 * valuesIn(leftValue, current?.left ?? 0)));
            }
          : (value) => {
              const cap = current?.left ?? 0;
              spend(Math.min(valuesIn(leftValue, cap), valuesIn(value, cap)));
            },
      );
    }
  }
  return charges;
}

/** Characters `duration()` takes at most: a Go duration such as "1h30m" needs a few. */
export const DURATION_TEXT = 64;

function chargeDuration(text: unknown): void {
  if (typeof text !== "string") return;
  if (text.length > DURATION_TEXT) {
    throw new Error(
      `duration() takes a text of at most ${DURATION_TEXT} characters; this one has ${text.length}`,
    );
  }
  spend(Math.ceil(text.length ** 3 / 64));
}

/** The values inside a list or map, all levels down, counted up to `cap`; 0 for a scalar. */
function valuesIn(value: unknown, cap: number): number {
  if (typeof value !== "object" || value === null) return 0;
  let n = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0 && n <= cap) {
    const v = stack.pop();
    if (typeof v !== "object" || v === null) continue;
    const inner = Array.isArray(v) ? v : v instanceof Map ? [...v.values()] : Object.values(v);
    n += inner.length;
    for (const x of inner) if (typeof x === "object" && x !== null) stack.push(x);
  }
  return n;
}

/** The part of cel-js's comprehension node that `all()` and `exists()` loop on. */
interface Comprehension {
  kind?: string;
  condition?: (accu: unknown) => boolean;
}

/** A quantifier (`all`, `exists`) goes on while its condition holds: not once the evaluation is spent. */
function stopWhenSpent(args: Comprehension): void {
  const condition = args.condition;
  if (args.kind !== "quantifier" || typeof condition !== "function") return;
  args.condition = (accu) => !spent() && condition(accu);
}

// --- Regular expressions --------------------------------------------------------------------

function isMatches(node: AstNode): boolean {
  return node.op === "rcall" && Array.isArray(node.args) && node.args[0] === "matches";
}

const patterns = new Map<string, RE2JS>();

/** Compiled RE2 patterns, the most recent 500 kept. */
export function re2(pattern: string): RE2JS {
  let re = patterns.get(pattern);
  if (re) {
    patterns.delete(pattern);
  } else {
    re = compilePattern(pattern);
    if (patterns.size >= 500) patterns.delete(patterns.keys().next().value as string);
  }
  patterns.set(pattern, re);
  return re;
}

function re2Matches(node: AstNode): Evaluate {
  const [, receiver, [pattern]] = node.args as [string, AstNode, [AstNode]];
  return (ev, _ast, ctx) => {
    const text = ev.run(receiver, ctx);
    const source = ev.run(pattern, ctx);
    if (typeof text !== "string" || typeof source !== "string") {
      throw new Error("matches() takes a string and a string pattern");
    }
    if (text.length > REGEX_LIMITS.matchTextLength) {
      throw new Error(
        `matches() takes a text of at most ${REGEX_LIMITS.matchTextLength} characters; this one has ${text.length}`,
      );
    }
    spend(source.length);
    let re: RE2JS;
    try {
      re = re2(source);
    } catch (err) {
      throw new Error(`invalid regular expression ${JSON.stringify(source)}: ${(err as Error).message}`);
    }
    // Paid before it runs, by what matching really costs (decision 0025).
    spend(matchWork(re, text));
    return re.test(text);
  };
}

/** A `matches()` whose pattern is a literal RE2 refuses, found at creation instead of at run time. */
function literalPatternProblem(root: unknown): string | undefined {
  for (const node of allNodes(root)) {
    if (!isMatches(node)) continue;
    const pattern = (node.args as [string, unknown, unknown[]])[2][0];
    if (!isNode(pattern) || pattern.op !== "value" || typeof pattern.args !== "string") continue;
    try {
      re2(pattern.args);
    } catch (err) {
      return `matches() pattern ${JSON.stringify(pattern.args)} is refused: not a valid RE2 regular expression, or too large (${(err as Error).message})`;
    }
  }
  return undefined;
}

/** A `duration()` of a literal text longer than it takes, found at creation instead of at run time. */
function literalDurationProblem(root: unknown): string | undefined {
  for (const node of allNodes(root)) {
    if (node.op !== "call" || !Array.isArray(node.args) || node.args[0] !== "duration") continue;
    const text = (node.args as [string, unknown[]])[1]?.[0];
    if (!isNode(text) || text.op !== "value" || typeof text.args !== "string") continue;
    if (text.args.length > DURATION_TEXT) {
      return `duration() takes a text of at most ${DURATION_TEXT} characters; this one has ${text.args.length}`;
    }
  }
  return undefined;
}

// --- Lists: inList(list, value) -------------------------------------------------------------

/** What a list id must match (contract section 7, "Lists"). */
export const LIST_ID_PATTERN = "^[a-z][a-z0-9_]{0,63}$";
const LIST_ID = new RegExp(LIST_ID_PATTERN);

/**
 * The lists an expression reads with `inList`, each named by a literal list id (so that a
 * version naming a list the tenant does not have is refused when it is created), or the problem.
 */
function listReferences(root: unknown): string[] | string {
  const found = new Set<string>();
  for (const node of allNodes(root)) {
    if (node.op !== "call" || !Array.isArray(node.args) || node.args[0] !== "inList") continue;
    const list = (node.args as [string, unknown[]])[1]?.[0];
    if (!isNode(list) || list.op !== "value" || typeof list.args !== "string") {
      return 'inList() names its list with a literal list id, such as inList("blocked_ibans", payload.iban)';
    }
    if (!LIST_ID.test(list.args)) {
      return `inList() list id ${JSON.stringify(list.args)} must match ${LIST_ID_PATTERN}`;
    }
    found.add(list.args);
  }
  return [...found];
}

/**
 * The answers of `inList` for one node evaluation, filled by the engine between attempts:
 * expressions stay synchronous, so an answer not yet known is recorded as missing, the
 * evaluation ends with `LookupsNeeded`, and the engine looks up what is missing (all of it in
 * one query) and evaluates the node again. Expressions are pure, so the last attempt, which
 * had every answer it asked for, is the evaluation.
 */
export class ListLookups {
  readonly #answers = new Map<string, boolean>();
  readonly #missing = new Map<string, { list: string; value: string }>();

  answer(list: string, value: string): boolean {
    const key = `${list}\u0000${value}`;
    const known = this.#answers.get(key);
    if (known !== undefined) return known;
    this.#missing.set(key, { list, value });
    return false;
  }

  /** The lookups the last attempt asked for and did not have, and forgets them. */
  takeMissing(): Array<{ list: string; value: string }> {
    const missing = [...this.#missing.values()];
    this.#missing.clear();
    return missing;
  }

  get hasMissing(): boolean {
    return this.#missing.size > 0;
  }

  learn(list: string, value: string, found: boolean): void {
    this.#answers.set(`${list}\u0000${value}`, found);
  }

  /** Every answer the node read, in the order it learned them (recorded with the step). */
  read(): Array<{ list: string; value: string; found: boolean }> {
    return [...this.#answers].map(([key, found]) => {
      const [list, value] = key.split("\u0000") as [string, string];
      return { list, value, found };
    });
  }
}

/** An evaluation that read list answers it does not have yet; the engine looks them up and runs it again. */
export class LookupsNeeded extends Signal {
  constructor() {
    super("the evaluation needs list lookups");
    this.name = "LookupsNeeded";
  }
}

/**
 * What the engine gives the expressions of one node's evaluation, carried by their variables
 * under a symbol key (kept by `{...vars}` copies): `give` puts it there, `of` reads it back.
 */
function carried<T>(name: string) {
  const key = Symbol(name);
  return {
    give: <V extends ExpressionVariables>(variables: V, value: T): V =>
      Object.assign(variables, { [key]: value }),
    of: (variables: ExpressionVariables): T | undefined => (variables as { [key]?: T })[key],
  };
}

/** The node's list answers. */
const LOOKUPS = carried<ListLookups>("listLookups");

/** Gives the expressions evaluated with these variables the list answers (the engine does, per node). */
export const withListLookups = LOOKUPS.give;

let currentLookups: ListLookups | undefined;

function inList(list: string, value: string): boolean {
  if (!currentLookups) throw new Error("inList() has no lists to read here");
  return currentLookups.answer(list, value);
}

/** Runs a compiled program; its failures (not a pause for lookups or a thread) as ExpressionError. */
function runAt(nodeId: string, source: string, run: (variables: ExpressionVariables) => unknown) {
  return (variables: ExpressionVariables): unknown => {
    try {
      return run(variables);
    } catch (err) {
      if (err instanceof LookupsNeeded || err instanceof ThreadNeeded) throw err;
      throw new ExpressionError(nodeId, source, failure(err));
    }
  };
}

export function compileExpression(nodeId: string, source: string): CompiledExpression {
  return { source, evaluate: runAt(nodeId, source, program(source, "value")) };
}

/** An expression that must give a string (an information request's `to`, `subject`, `body`). */
export function compileText(nodeId: string, source: string): CompiledExpression {
  return { source, evaluate: runAt(nodeId, source, program(source, "string")) };
}

export function compileCondition(nodeId: string, source: string): CompiledCondition {
  const run = runAt(nodeId, source, program(source, "condition"));
  return { source, test: (variables) => run(variables) as boolean };
}

export function compileOutput(nodeId: string, entries: Record<string, string> | undefined): CompiledOutput {
  const compiled = Object.entries(entries ?? {}).map(([key, source]) => ({
    key,
    expression: compileExpression(nodeId, source),
  }));
  return {
    keys: compiled.map((c) => c.key),
    evaluate(variables: ExpressionVariables): Record<string, unknown> {
      const out: Record<string, unknown> = {};
      for (const { key, expression } of compiled) setKey(out, key, expression.evaluate(variables));
      return out;
    },
  };
}

// --- Evaluation on a thread (decision 0024) ---------------------------------------------------

/** An expression to evaluate on a thread: what it is, where it stands, and the budget it has left. */
export interface ExpressionTask {
  kind: ExpressionKind;
  source: string;
  budget: number;
  variables: ExpressionVariables;
  /** The list answers the node evaluation has learned. */
  answers: Array<{ list: string; value: string; found: boolean }>;
}

/**
 * What the thread found: the value or the failure, the units spent, list answers it lacked, and
 * the customer attributes it read.
 */
export type ExpressionResult = {
  spent: number;
  missing: Array<{ list: string; value: string }>;
  attributeKeys?: string[];
} & ({ value: unknown } | { error: string });

/**
 * The expressions of one node evaluation that ran on a thread, by kind and source, and the one
 * that asks to. Expressions are pure: the node is evaluated again, and an expression evaluated
 * on a thread gives the result it had there (its units charged to the node's budget).
 */
export class Offloads {
  readonly #results = new Map<string, ExpressionResult>();
  #wanted: WantedExpression | undefined;

  result(kind: ExpressionKind, source: string): ExpressionResult | undefined {
    return this.#results.get(`${kind}\u0000${source}`);
  }

  want(task: WantedExpression): void {
    this.#wanted ??= task;
  }

  /** The expression the last attempt handed over, and forgets it. */
  takeWanted(): WantedExpression | undefined {
    const wanted = this.#wanted;
    this.#wanted = undefined;
    return wanted;
  }

  learn(kind: ExpressionKind, source: string, result: ExpressionResult): void {
    this.#results.set(`${kind}\u0000${source}`, result);
  }

  /** Every result learned, as plain data (to carry them to a later evaluation of the node). */
  entries(): OffloadEntry[] {
    return [...this.#results].map(([key, result]) => {
      const [kind, source] = key.split("\u0000") as [ExpressionKind, string];
      return { kind, source, result };
    });
  }

  static of(entries: readonly OffloadEntry[]): Offloads {
    const offloads = new Offloads();
    for (const e of entries) offloads.learn(e.kind, e.source, e.result);
    return offloads;
  }
}

/**
 * An expression handed over to a thread: what it is, the budget it had left when it started,
 * and the `nodes` of the variables it was evaluated with.
 */
export interface WantedExpression {
  kind: ExpressionKind;
  source: string;
  budget: number;
  nodes: Record<string, unknown>;
}

/** An expression evaluated on a thread and its result. */
export interface OffloadEntry {
  kind: ExpressionKind;
  source: string;
  result: ExpressionResult;
}

/** An evaluation that passed its inline allowance: the engine runs the expression on a thread and evaluates the node again. */
export class ThreadNeeded extends Signal {
  constructor() {
    super("the evaluation goes on a thread");
    this.name = "ThreadNeeded";
  }
}

/** The node's results of expressions run on a thread. */
const OFFLOADS = carried<Offloads>("offloads");

/** Lets the expressions evaluated with these variables move to a thread (the engine does, per node). */
export const withOffloads = OFFLOADS.give;

const threadPrograms = new Map<string, (variables: ExpressionVariables) => unknown>();

/** Evaluates an expression handed to a thread: on the thread, with the budget it was given. */
export function evaluateTask(task: ExpressionTask): ExpressionResult {
  const key = `${task.kind}\u0000${task.source}`;
  let run = threadPrograms.get(key);
  if (!run) {
    run = program(task.source, task.kind);
    if (threadPrograms.size >= 500) threadPrograms.delete(threadPrograms.keys().next().value as string);
    threadPrograms.set(key, run);
  }
  const lookups = new ListLookups();
  for (const a of task.answers) lookups.learn(a.list, a.value, a.found);
  const read = new Set<string>();
  const attributes = new Proxy(task.variables.customer.attributes, {
    getOwnPropertyDescriptor(target, key) {
      if (typeof key === "string") read.add(key);
      return Reflect.getOwnPropertyDescriptor(target, key);
    },
    ownKeys(target) {
      const keys = Reflect.ownKeys(target);
      for (const key of keys) if (typeof key === "string") read.add(key);
      return keys;
    },
  });
  const variables = withListLookups(
    { ...task.variables, customer: { ...task.variables.customer, attributes } },
    lookups,
  );
  const m = newMeter(task.budget, undefined);
  meters.set(variables, m);
  const facts = () => ({ spent: Math.min(task.budget - m.left, task.budget + 1), attributeKeys: [...read] });
  try {
    const value = run(variables);
    return { ...facts(), missing: [], value };
  } catch (err) {
    if (err instanceof LookupsNeeded) return { ...facts(), missing: lookups.takeMissing(), error: "" };
    return { ...facts(), missing: [], error: failure(err) };
  }
}
