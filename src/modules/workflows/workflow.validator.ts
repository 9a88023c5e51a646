import type { ValidateFunction } from "ajv";
import type { ErrorDetail } from "../../platform/errors.js";
import { checkInputSchema, createAjv, detailsOf } from "./json-schema.js";
import type { NodeExpression, NodeTypes } from "./node-type.js";
import { checkExpression } from "./workflow.expressions.js";
import { NODE_ID_PATTERN, PATTERN_MESSAGES, workflowDefinitionSchema } from "./workflow.schema.js";

/**
 * Checks a workflow definition and reports every problem at once, each at the path of the
 * field at fault (`nodes[2].rules[0].when`): first the structure (the JSON Schema of the
 * language), then what a schema cannot say: ids and references, reachability, cycles, each node
 * type's own rules, expressions and the input schema.
 */
export function validateDefinition(types: NodeTypes, definition: unknown): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  const checkStructure = structureCheck(types);
  const valid: boolean = checkStructure(definition);
  if (!valid) {
    for (const detail of detailsOf(checkStructure.errors ?? [], "", { patternMessages: PATTERN_MESSAGES })) {
      const typeOf = /^nodes\[(\d+)\]\.type$/.exec(detail.path);
      const nodes = isObject(definition) && Array.isArray(definition.nodes) ? definition.nodes : [];
      const node = typeOf ? nodes[Number(typeOf[1])] : undefined;
      if (isObject(node) && typeof node.type === "string" && !isKnownType(types, node.type)) {
        detail.message = `unknown node type ${JSON.stringify(node.type)}: ${detail.message}`;
      }
      problems.push(detail);
    }
  }
  if (!isObject(definition)) return problems;

  const nodes = Array.isArray(definition.nodes) ? definition.nodes : [];
  const graph = buildGraph(types, nodes, problems);
  checkGraph(definition.start, graph, problems);
  nodes.forEach((node, i) => {
    if (!isObject(node)) return;
    const at = `nodes[${i}]`;
    checkNodeRules(types, node, at, problems);
    checkNodeExpressions(types, node, at, graph, problems);
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

/** The structure check, compiled once per catalogue of node types. */
function structureCheck(types: NodeTypes): ValidateFunction {
  return types.derived("structureCheck", () => createAjv().compile(workflowDefinitionSchema(types)));
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const NODE_ID = new RegExp(NODE_ID_PATTERN);

function isNodeId(value: unknown): value is string {
  return typeof value === "string" && NODE_ID.test(value);
}

function isKnownType(types: NodeTypes, value: unknown): boolean {
  return typeof value === "string" && types.of(value) !== undefined;
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

/** Every field of a node that names the node to continue with, by its node type. */
function referencesOf(types: NodeTypes, node: Json, at: string): Edge[] {
  const type = typeof node.type === "string" ? types.of(node.type) : undefined;
  return (type?.references(node, at) ?? []).filter((ref) => isNodeId(ref.target));
}

function buildGraph(types: NodeTypes, nodes: unknown[], problems: ErrorDetail[]): Graph {
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
    if (!isObject(node) || !isKnownType(types, node.type)) return [];
    const known: Edge[] = [];
    for (const ref of referencesOf(types, node, `nodes[${i}]`)) {
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

/** The rules of the node's type that the schema cannot state. */
function checkNodeRules(types: NodeTypes, node: Json, at: string, problems: ErrorDetail[]): void {
  const type = typeof node.type === "string" ? types.of(node.type) : undefined;
  type?.check?.(node, at, problems);
}

/**
 * What a (valid) definition's expressions read from outside the case, each expression checked
 * once: the lists they read with `inList`, each with where it is read, and whether any may read
 * the customer's attributes (names `customer`, or could not be checked).
 */
export function readsOf(
  types: NodeTypes,
  definition: unknown,
): { lists: Array<{ path: string; list: string }>; readsCustomer: boolean } {
  if (!isObject(definition) || !Array.isArray(definition.nodes)) return { lists: [], readsCustomer: true };
  const lists: Array<{ path: string; list: string }> = [];
  let readsCustomer = false;
  definition.nodes.forEach((node, i) => {
    if (!isObject(node)) {
      readsCustomer = true;
      return;
    }
    for (const { path, source } of expressionsOf(types, node, `nodes[${i}]`)) {
      const checked = checkExpression(source, "value");
      if (!checked.ok) {
        readsCustomer = true;
        continue;
      }
      for (const list of checked.listRefs) lists.push({ path, list });
      readsCustomer ||= checked.readsCustomer;
    }
  });
  return { lists, readsCustomer };
}

/** The lists a (valid) definition's expressions read with `inList`, each with where it is read. */
export function listReferencesOf(
  types: NodeTypes,
  definition: unknown,
): Array<{ path: string; list: string }> {
  return readsOf(types, definition).lists;
}

/** Every expression of a node, by its node type. */
function expressionsOf(types: NodeTypes, node: Json, at: string): NodeExpression[] {
  const type = typeof node.type === "string" ? types.of(node.type) : undefined;
  return type?.expressions(node, at) ?? [];
}

function checkNodeExpressions(
  types: NodeTypes,
  node: Json,
  at: string,
  graph: Graph,
  problems: ErrorDetail[],
): void {
  const self = isNodeId(node.id) ? graph.index.get(node.id) : undefined;
  for (const { path, source, kind, readsOwnNode } of expressionsOf(types, node, at)) {
    const checked = checkExpression(source, kind);
    if (!checked.ok) {
      problems.push({ path, message: checked.message });
      continue;
    }
    for (const ref of checked.nodeRefs) {
      const target = graph.index.get(ref);
      if (target === undefined) {
        problems.push({ path, message: `reads ${nodeRead(ref)}, but there is no node "${ref}"` });
      } else if (target === self) {
        // A score node's output reads its own score; nothing else of a node exists while it runs.
        if (!readsOwnNode) {
          problems.push({
            path,
            message: `reads ${nodeRead(ref)}, the output of this very node, which it does not have yet`,
          });
        }
      } else if (self !== undefined && !reachableFrom(graph, target).has(self)) {
        problems.push({
          path,
          message: `reads ${nodeRead(ref)}, but node "${ref}" never runs before this node`,
        });
      }
    }
  }
}

/** How an expression reads the node: `nodes.screen`, or `nodes["kyc-check"]` for an id with a hyphen. */
function nodeRead(id: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(id) ? `nodes.${id}` : `nodes[${JSON.stringify(id)}]`;
}
