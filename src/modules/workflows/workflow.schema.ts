import { DECISION_VALUES } from "../case-model/index.js";
import { WEBHOOK_KEY_PATTERN as WEBHOOK_KEY } from "../webhooks/index.js";
import type { NodeType, NodeTypes } from "./node-type.js";

/**
 * The JSON Schema (2020-12) of a workflow definition: the one source of the language's
 * structure, each node type's part taken from its registered node type (node-type.ts). The
 * validator checks definitions against it, and `cds workflow schema` prints it
 * (docs/workflow-definition.schema.json is that output, kept equal by a test).
 * What a schema cannot say (references between nodes, expressions, the input schema) the
 * validator checks after it.
 */

/** `kyc-standard`: the workflow's name in paths and on cases. */
export const WORKFLOW_ID_PATTERN = "^[A-Za-z0-9_.-]{1,64}$";
/**
 * A node id: `nodes.kyc_check` reads a node's output, and an id with a hyphen is read as
 * `nodes["kyc-check"]`.
 */
export const NODE_ID_PATTERN = "^[A-Za-z_][A-Za-z0-9_-]{0,63}$";
/** Output and payload keys: read back as `nodes.<id>.<key>`, so CEL identifiers. */
export const OUTPUT_KEY_PATTERN = "^[A-Za-z_][A-Za-z0-9_]{0,63}$";
/** Exactly what a webhook configuration may be named, so that a node never names one that cannot exist. */
export const WEBHOOK_KEY_PATTERN = WEBHOOK_KEY.source;
export const PROVIDER_ID_PATTERN = WORKFLOW_ID_PATTERN;

export const LIMITS = {
  nodes: 200,
  rulesPerNode: 100,
  outputEntries: 50,
  bands: 20,
  cc: 20,
  expressionLength: 4096,
  /** Points and band scores stay within ± this. */
  score: 1_000_000,
  /** 90 days. */
  maxExpiresInSeconds: 7_776_000,
  defaultCallbackExpiresInSeconds: 86_400,
} as const;

const ref = (name: string) => ({ $ref: `#/$defs/${name}` });

/** The properties every node has; the per-type schemas list them so that nothing else is allowed. */
const nodeBase = {
  id: ref("nodeId"),
  description: { type: "string", maxLength: 2000 },
} as const;

function nodeSchema(node: NodeType): Record<string, unknown> {
  const { description, required, properties } = node.definition;
  return {
    description,
    type: "object",
    required: ["id", "type", ...required],
    properties: { ...nodeBase, type: { const: node.type }, ...properties },
    additionalProperties: false,
  };
}

/** A non-empty list of at most `max` objects with exactly these properties, each required. */
export function clauses(max: number, properties: Record<string, unknown>): Record<string, unknown> {
  return {
    type: "array",
    minItems: 1,
    maxItems: max,
    items: { type: "object", required: Object.keys(properties), properties, additionalProperties: false },
  };
}

const defs = {
  nodeId: {
    description:
      "A node id of up to 64 letters, digits, '_' or '-', unique in the workflow; one with a hyphen is read as nodes[\"kyc-check\"].",
    type: "string",
    pattern: NODE_ID_PATTERN,
  },
  nodeRef: {
    description: "The id of another node of this workflow.",
    type: "string",
    pattern: NODE_ID_PATTERN,
  },
  expression: {
    description: "A CEL expression over payload, subject, metadata, case, customer and nodes.",
    type: "string",
    minLength: 1,
    maxLength: LIMITS.expressionLength,
  },
  condition: {
    description: "A CEL expression that evaluates to a boolean.",
    $ref: "#/$defs/expression",
  },
  decision: { enum: [...DECISION_VALUES] },
  output: {
    description: "Named CEL expressions, evaluated together into a JSON object.",
    type: "object",
    maxProperties: LIMITS.outputEntries,
    propertyNames: { pattern: OUTPUT_KEY_PATTERN },
    additionalProperties: ref("expression"),
  },
  webhookKey: {
    description: "A named webhook configuration of the tenant; absent: the default one.",
    type: "string",
    pattern: WEBHOOK_KEY_PATTERN,
  },
  expiresInSeconds: { type: "integer", minimum: 1, maximum: LIMITS.maxExpiresInSeconds },
  score: { type: "number", minimum: -LIMITS.score, maximum: LIMITS.score },
};

/** The schema of a definition with every node type the process knows, built once per catalogue. */
export function workflowDefinitionSchema(catalogue: NodeTypes): Record<string, unknown> {
  return catalogue.derived("definitionSchema", () => buildSchema(catalogue.all()));
}

function buildSchema(types: NodeType[]): Record<string, unknown> {
  const perType = Object.fromEntries(types.map((t) => [`${t.type}Node`, nodeSchema(t)]));
  const node = {
    type: "object",
    required: ["id", "type"],
    properties: { id: ref("nodeId"), type: { enum: types.map((t) => t.type) } },
    allOf: types.map((t) => ({
      if: { properties: { type: { const: t.type } }, required: ["type"] },
      // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then, never awaited
      then: ref(`${t.type}Node`),
    })),
  };
  const schema = {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    title: "Workflow definition",
    description:
      "A version of a workflow of the case decisioning service. Beyond this schema, node " +
      "references must resolve, every node must be reachable from `start`, the graph must be " +
      "acyclic, and every expression must compile and type-check (see docs/workflows.md).",
    type: "object",
    required: ["inputSchema", "start", "nodes"],
    properties: {
      name: { type: "string", minLength: 1, maxLength: 200 },
      description: { type: "string", maxLength: 2000 },
      inputSchema: {
        description: "A JSON Schema 2020-12 that every case's `payload` must satisfy.",
        type: "object",
      },
      start: ref("nodeRef"),
      nodes: { type: "array", minItems: 1, maxItems: LIMITS.nodes, items: ref("node") },
    },
    additionalProperties: false,
    $defs: { ...defs, node, ...perType },
  };
  return schema;
}

/** What each failing pattern means, for messages an operator can act on. */
export const PATTERN_MESSAGES: Record<string, string> = {
  [NODE_ID_PATTERN]: "must be 1 to 64 letters, digits, '_' or '-', starting with a letter or '_'",
  [OUTPUT_KEY_PATTERN]: "must be 1 to 64 letters, digits or underscores, not starting with a digit",
  [WORKFLOW_ID_PATTERN]: "must be 1 to 64 letters, digits, '_', '.' or '-'",
  [WEBHOOK_KEY_PATTERN]: "must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit",
};
