import { DECISION_VALUES } from "../cases/case-status.js";
import { WEBHOOK_KEY_PATTERN as WEBHOOK_KEY } from "../webhooks/webhook-configs.service.js";
import type { NodeType } from "./workflow.types.js";

/**
 * The JSON Schema (2020-12) of a workflow definition: the one source of the language's
 * structure. The validator checks definitions against it, and `cds workflow schema` prints it
 * (docs/workflow-definition.schema.json is that output, kept equal by a test).
 * What a schema cannot say (references between nodes, expressions, the input schema) the
 * validator checks after it.
 */

export const NODE_TYPES = [
  "rules",
  "decision",
  "score",
  "notify",
  "external_callback",
  "information_request",
  "provider",
] as const satisfies readonly NodeType[];

/** `kyc-standard`: the workflow's name in paths and on cases. */
export const WORKFLOW_ID_PATTERN = "^[A-Za-z0-9_.-]{1,64}$";
/** A CEL identifier, so that `nodes.<id>` reads a node's output in every expression. */
export const NODE_ID_PATTERN = "^[A-Za-z_][A-Za-z0-9_]{0,63}$";
/** Output and payload keys: read back as `nodes.<id>.<key>`, so CEL identifiers too. */
export const OUTPUT_KEY_PATTERN = NODE_ID_PATTERN;
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

function nodeSchema(
  type: NodeType,
  description: string,
  required: string[],
  properties: Record<string, unknown>,
): Record<string, unknown> {
  return {
    description,
    type: "object",
    required: ["id", "type", ...required],
    properties: { ...nodeBase, type: { const: type }, ...properties },
    additionalProperties: false,
  };
}

/** A non-empty list of at most `max` objects with exactly these properties, each required. */
function clauses(max: number, properties: Record<string, unknown>): Record<string, unknown> {
  return {
    type: "array",
    minItems: 1,
    maxItems: max,
    items: { type: "object", required: Object.keys(properties), properties, additionalProperties: false },
  };
}

const defs = {
  nodeId: {
    description: "A node id: a CEL identifier of up to 64 characters, unique in the workflow.",
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
  node: {
    type: "object",
    required: ["id", "type"],
    properties: { id: ref("nodeId"), type: { enum: [...NODE_TYPES] } },
    allOf: NODE_TYPES.map((type) => ({
      if: { properties: { type: { const: type } }, required: ["type"] },
      // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then, never awaited
      then: ref(`${type}Node`),
    })),
  },
  rulesNode: nodeSchema(
    "rules",
    "Rules in order: the first whose `when` holds picks `next`; when none holds, `default`.",
    ["rules", "default"],
    {
      rules: clauses(LIMITS.rulesPerNode, { when: ref("condition"), next: ref("nodeRef") }),
      default: ref("nodeRef"),
    },
  ),
  decisionNode: nodeSchema(
    "decision",
    "Ends the workflow with a fixed `decision`, or the first case whose `when` holds, else `default`.",
    [],
    {
      decision: ref("decision"),
      cases: clauses(LIMITS.rulesPerNode, { when: ref("condition"), decision: ref("decision") }),
      default: ref("decision"),
      output: ref("output"),
    },
  ),
  scoreNode: nodeSchema(
    "score",
    "Sums the points of every rule that holds; the band with the highest minScore not above the score decides.",
    ["rules", "bands"],
    {
      rules: clauses(LIMITS.rulesPerNode, { when: ref("condition"), points: ref("score") }),
      bands: clauses(LIMITS.bands, { minScore: ref("score"), decision: ref("decision") }),
      output: ref("output"),
    },
  ),
  notifyNode: nodeSchema(
    "notify",
    "Emits `node.notification` with `output`, then goes on to `next`.",
    ["output", "next"],
    {
      payloadType: { type: "string", minLength: 1, maxLength: 128 },
      tag: { type: "string", minLength: 1, maxLength: 64 },
      webhookKey: ref("webhookKey"),
      output: ref("output"),
      next: ref("nodeRef"),
    },
  ),
  external_callbackNode: nodeSchema(
    "external_callback",
    "Emits `external_callback.dispatch` and pauses until the callback (`next`) or the expiry (`onTimeout`).",
    ["next"],
    {
      payload: ref("output"),
      webhookKey: ref("webhookKey"),
      expiresInSeconds: {
        ...ref("expiresInSeconds"),
        default: LIMITS.defaultCallbackExpiresInSeconds,
      },
      next: ref("nodeRef"),
      onTimeout: ref("nodeRef"),
    },
  ),
  information_requestNode: nodeSchema(
    "information_request",
    "Raises an information request; with `awaitResponse` pauses until it is answered, cancelled or expires.",
    ["to", "subject", "body", "next"],
    {
      to: ref("expression"),
      subject: ref("expression"),
      body: ref("expression"),
      cc: {
        type: "array",
        maxItems: LIMITS.cc,
        items: { type: "string", format: "email" },
      },
      templateId: { type: "string", minLength: 1, maxLength: 200 },
      webhookKey: ref("webhookKey"),
      awaitResponse: { type: "boolean", default: false },
      expiresInSeconds: ref("expiresInSeconds"),
      next: ref("nodeRef"),
      onExpired: ref("nodeRef"),
      onCancelled: ref("nodeRef"),
    },
  ),
  providerNode: nodeSchema(
    "provider",
    "Runs a verification provider; may pause with pending actions until it reports a result.",
    ["provider", "next"],
    {
      provider: { type: "string", pattern: PROVIDER_ID_PATTERN },
      config: { type: "object" },
      next: ref("nodeRef"),
      onTimeout: ref("nodeRef"),
    },
  ),
};

export const WORKFLOW_DEFINITION_SCHEMA = {
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
  $defs: defs,
} as const;

/** What each failing pattern means, for messages an operator can act on. */
export const PATTERN_MESSAGES: Record<string, string> = {
  [NODE_ID_PATTERN]: "must be 1 to 64 letters, digits or underscores, not starting with a digit",
  [WORKFLOW_ID_PATTERN]: "must be 1 to 64 letters, digits, '_', '.' or '-'",
  [WEBHOOK_KEY_PATTERN]: "must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit",
};
