import type { ErrorDetail } from "../../platform/errors.js";
import { checkInputSchema, createAjv, detailsOf, pathOf } from "./json-schema.js";
import { checkExpression, type ExpressionKind } from "./workflow.expressions.js";
import {
  NODE_ID_PATTERN,
  NODE_TYPES,
  PATTERN_MESSAGES,
  WORKFLOW_DEFINITION_SCHEMA,
} from "./workflow.schema.js";

/**
 * Checks a workflow definition and reports every problem at once, each at the path of the
 * field at fault (`nodes[2].rules[0].when`): first the structure (the JSON Schema of the
 * language), then what a schema cannot say: ids and references, reachability, cycles, the
 * decision and score rules, expressions and the input schema.
 */
export function validateDefinition(definition: unknown): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  if (!checkStructure(definition)) {
    for (const detail of detailsOf(checkStructure.errors ?? [], "", { patternMessages: PATTERN_MESSAGES })) {
      const typeOf = /^nodes\[(\d+)\]\.type$/.exec(detail.path);
      const nodes = isObject(definition) && Array.isArray(definition.nodes) ? definition.nodes : [];
      const node = typeOf ? nodes[Number(typeOf[1])] : undefined;
      if (isObject(node) && typeof node.type === "string" && !isKnownType(node.type)) {
        detail.message = `unknown node type ${JSON.stringify(node.type)}: ${detail.message}`;
      }
      problems.push(detail);
    }
  }
  if (!isObject(definition)) return problems;

  const nodes = Array.isArray(definition.nodes) ? definition.nodes : [];
  const graph = buildGraph(nodes, problems);
  checkGraph(definition.start, graph, problems);
  nodes.forEach((node, i) => {
    if (!isObject(node)) return;
    const at = `nodes[${i}]`;
    checkNodeRules(node, at, problems);
    checkNodeExpressions(node, at, graph, problems);
  });
  if (isObject(definition.inputSchema)) {
    problems.push(...checkInputSchema(definition.inputSchema, "inputSchema"));
  }
  return inDocumentOrder(problems);
}

const FIELD_ORDER = ["name", "description", "inputSchema", "start", "nodes"];

/** Problems in the order of the fields they concern, node by node; stable within one place. */
function inDocumentOrder(problems: ErrorDetail[]): ErrorDetail[] {
  const rank = (path: string): [number, number] => {
    const field = /^[A-Za-z_$][\w$]*/.exec(path)?.[0] ?? "";
    const index = FIELD_ORDER.indexOf(field);
    const node = /^nodes\[(\d+)\]/.exec(path);
    return [index === -1 ? FIELD_ORDER.length : index, node ? Number(node[1]) : -1];
  };
  return problems
    .map((problem, i) => ({ problem, i, rank: rank(problem.path) }))
    .sort((a, b) => a.rank[0] - b.rank[0] || a.rank[1] - b.rank[1] || a.i - b.i)
    .map((x) => x.problem);
}

const checkStructure = createAjv().compile(WORKFLOW_DEFINITION_SCHEMA);

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const NODE_ID = new RegExp(NODE_ID_PATTERN);

function isNodeId(value: unknown): value is string {
  return typeof value === "string" && NODE_ID.test(value);
}

function isKnownType(value: unknown): boolean {
  return (NODE_TYPES as readonly unknown[]).includes(value);
}

/** A reference from one node to the next: the field holding it and the node it names. */
interface Edge {
  path: string;
  target: string;
}

interface Graph {
  /** Node id → its index in `nodes` (the first node with that id). */
  index: Map<string, number>;
  /** Node index → its references to known nodes. */
  edges: Edge[][];
  ids: Array<string | undefined>;
}

/** Every field of a node that names the node to continue with. */
function referencesOf(node: Json, at: string): Edge[] {
  const refs: Edge[] = [];
  const add = (field: string) => {
    if (isNodeId(node[field])) refs.push({ path: `${at}.${field}`, target: node[field] as string });
  };
  switch (node.type) {
    case "rules":
      if (Array.isArray(node.rules)) {
        node.rules.forEach((rule, j) => {
          if (isObject(rule) && isNodeId(rule.next))
            refs.push({ path: `${at}.rules[${j}].next`, target: rule.next });
        });
      }
      add("default");
      break;
    case "notify":
    case "external_callback":
    case "information_request":
    case "provider":
      add("next");
      add("onTimeout");
      add("onExpired");
      add("onCancelled");
      break;
  }
  return refs;
}

function buildGraph(nodes: unknown[], problems: ErrorDetail[]): Graph {
  const index = new Map<string, number>();
  const ids: Array<string | undefined> = [];
  nodes.forEach((node, i) => {
    const id = isObject(node) && isNodeId(node.id) ? node.id : undefined;
    ids.push(id);
    if (id === undefined) return;
    const first = index.get(id);
    if (first === undefined) index.set(id, i);
    else problems.push({ path: `nodes[${i}].id`, message: `duplicates the id "${id}" of nodes[${first}]` });
  });
  const edges = nodes.map((node, i) => {
    if (!isObject(node) || !isKnownType(node.type)) return [];
    const known: Edge[] = [];
    for (const ref of referencesOf(node, `nodes[${i}]`)) {
      if (index.has(ref.target)) known.push(ref);
      else problems.push({ path: ref.path, message: `refers to unknown node "${ref.target}"` });
    }
    return known;
  });
  return { index, edges, ids };
}

function successors(graph: Graph, i: number): number[] {
  return (graph.edges[i] ?? []).map((e) => graph.index.get(e.target) as number);
}

/** The indexes of the nodes reachable from `from` by one or more steps. */
function reachableFrom(graph: Graph, from: number): Set<number> {
  const seen = new Set<number>();
  const stack = successors(graph, from);
  while (stack.length > 0) {
    const i = stack.pop() as number;
    if (seen.has(i)) continue;
    seen.add(i);
    stack.push(...successors(graph, i));
  }
  return seen;
}

function checkGraph(start: unknown, graph: Graph, problems: ErrorDetail[]): void {
  if (isNodeId(start)) {
    const first = graph.index.get(start);
    if (first === undefined) {
      problems.push({ path: "start", message: `refers to unknown node "${start}"` });
    } else {
      const reached = reachableFrom(graph, first);
      reached.add(first);
      graph.ids.forEach((id, i) => {
        if (id !== undefined && graph.index.get(id) === i && !reached.has(i)) {
          problems.push({
            path: `nodes[${i}]`,
            message: `node "${id}" is unreachable from start "${start}"`,
          });
        }
      });
    }
  }

  // Depth-first search: an edge back to a node still on the stack closes a cycle.
  const state = new Map<number, "open" | "done">();
  const stack: number[] = [];
  const visit = (i: number): void => {
    state.set(i, "open");
    stack.push(i);
    for (const edge of graph.edges[i] ?? []) {
      const j = graph.index.get(edge.target) as number;
      if (state.get(j) === "open") {
        const loop = [...stack.slice(stack.indexOf(j)), j].map((k) => graph.ids[k]).join(" → ");
        problems.push({ path: edge.path, message: `closes a cycle: ${loop}` });
      } else if (!state.has(j)) {
        visit(j);
      }
    }
    stack.pop();
    state.set(i, "done");
  };
  graph.edges.forEach((_, i) => {
    if (!state.has(i)) visit(i);
  });
}

/** The rules of each node type that the schema cannot state. */
function checkNodeRules(node: Json, at: string, problems: ErrorDetail[]): void {
  switch (node.type) {
    case "decision": {
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
      break;
    }
    case "score": {
      if (!Array.isArray(node.bands)) break;
      const scores = node.bands.map((b) => (isObject(b) ? b.minScore : undefined));
      scores.forEach((s, j) => {
        if (typeof s === "number" && scores.indexOf(s) !== j) {
          problems.push({ path: `${at}.bands[${j}].minScore`, message: `repeats the minScore ${s}` });
        }
      });
      // A score below every band would leave the case without a decision.
      const points = Array.isArray(node.rules) ? node.rules.map((r) => (isObject(r) ? r.points : 0)) : [];
      const lowest = points.reduce<number>((sum, p) => (typeof p === "number" && p < 0 ? sum + p : sum), 0);
      const floors = scores.filter((s): s is number => typeof s === "number");
      if (floors.length > 0 && Math.min(...floors) > lowest) {
        problems.push({
          path: `${at}.bands`,
          message: `no band covers the lowest possible score ${lowest}; the lowest minScore must be at most ${lowest}`,
        });
      }
      break;
    }
    case "information_request": {
      if (node.awaitResponse === true) {
        if (node.expiresInSeconds === undefined) {
          problems.push({
            path: `${at}.expiresInSeconds`,
            message: "is required when awaitResponse is true",
          });
        }
      } else {
        for (const field of ["onExpired", "onCancelled"]) {
          if (node[field] !== undefined) {
            problems.push({ path: `${at}.${field}`, message: "is only taken when awaitResponse is true" });
          }
        }
      }
      break;
    }
  }
}

/** Every expression of a node: where it is, and what it must produce. */
function expressionsOf(
  node: Json,
  at: string,
): Array<{ path: string; source: string; kind: ExpressionKind }> {
  const found: Array<{ path: string; source: string; kind: ExpressionKind }> = [];
  const add = (path: string, source: unknown, kind: ExpressionKind) => {
    if (typeof source === "string" && source.trim() !== "") found.push({ path, source, kind });
  };
  const conditions = (field: "rules" | "cases") => {
    const list = node[field];
    if (!Array.isArray(list)) return;
    list.forEach((item, j) => {
      if (isObject(item)) add(`${at}.${field}[${j}].when`, item.when, "condition");
    });
  };
  const map = (field: "output" | "payload") => {
    const entries = node[field];
    if (!isObject(entries)) return;
    for (const [key, source] of Object.entries(entries))
      add(pathOf(`${at}.${field}`, "", key), source, "value");
  };
  switch (node.type) {
    case "rules":
      conditions("rules");
      break;
    case "decision":
      conditions("cases");
      map("output");
      break;
    case "score":
      conditions("rules");
      map("output");
      break;
    case "notify":
      map("output");
      break;
    case "external_callback":
      map("payload");
      break;
    case "information_request":
      for (const field of ["to", "subject", "body"]) add(`${at}.${field}`, node[field], "string");
      break;
  }
  return found;
}

function checkNodeExpressions(node: Json, at: string, graph: Graph, problems: ErrorDetail[]): void {
  const self = isNodeId(node.id) ? graph.index.get(node.id) : undefined;
  for (const { path, source, kind } of expressionsOf(node, at)) {
    const checked = checkExpression(source, kind);
    if (!checked.ok) {
      problems.push({ path, message: checked.message });
      continue;
    }
    for (const ref of checked.nodeRefs) {
      const target = graph.index.get(ref);
      if (target === undefined) {
        problems.push({ path, message: `reads nodes.${ref}, but there is no node "${ref}"` });
      } else if (target === self) {
        // A score node's output reads its own score; nothing else of a node exists while it runs.
        if (!(node.type === "score" && path.startsWith(`${at}.output.`))) {
          problems.push({
            path,
            message: `reads nodes.${ref}, the output of this very node, which it does not have yet`,
          });
        }
      } else if (self !== undefined && !reachableFrom(graph, target).has(self)) {
        problems.push({ path, message: `reads nodes.${ref}, but node "${ref}" never runs before this node` });
      }
    }
  }
}
