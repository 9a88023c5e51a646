import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getCompiledWorkflow } from "../src/modules/workflows/workflows.service.js";
import { createTestApp, type TestApp } from "./support/app.js";
import { adminHeaders, createTenant } from "./support/fixtures.js";

let h: TestApp;
let tenantId: string;
beforeAll(async () => {
  h = await createTestApp();
  tenantId = await createTenant(h.app);
});
afterAll(async () => {
  await h.close();
});

// biome-ignore lint/suspicious/noExplicitAny: the tests reach into definitions freely to break them
type Json = Record<string, any>;

/** A valid definition with every node type; each test breaks one thing. */
function full(): Json {
  return {
    name: "everything",
    description: "one node of each type",
    inputSchema: {
      type: "object",
      required: ["amount"],
      properties: { amount: { type: "number", minimum: 0 }, email: { type: "string", format: "email" } },
    },
    start: "route",
    nodes: [
      {
        id: "route",
        type: "rules",
        rules: [{ when: "payload.amount > 1000", next: "notify" }],
        default: "approve",
      },
      {
        id: "notify",
        type: "notify",
        payloadType: "screen-started",
        tag: "large-amount",
        webhookKey: "alerts",
        output: { amount: "payload.amount" },
        next: "callback",
      },
      {
        id: "callback",
        type: "external_callback",
        payload: { amount: "payload.amount", caseId: "case.id" },
        expiresInSeconds: 3600,
        next: "ask",
        onTimeout: "review",
      },
      {
        id: "ask",
        type: "information_request",
        to: "has(payload.email) ? payload.email : 'kyc@example.com'",
        subject: '"Documents for case " + case.id',
        body: '"Please send proof of funds for " + string(payload.amount)',
        cc: ["ops@example.com"],
        templateId: "proof-of-funds",
        awaitResponse: true,
        expiresInSeconds: 86400,
        next: "verify",
        onExpired: "review",
        onCancelled: "review",
      },
      {
        id: "verify",
        type: "provider",
        provider: "sumsub",
        config: { levelName: "basic-kyc-level" },
        next: "risk",
        onTimeout: "review",
      },
      {
        id: "risk",
        type: "score",
        rules: [
          { when: 'nodes.callback.verdict == "match"', points: 50 },
          { when: "has(nodes.ask.fields.pep) && nodes.ask.fields.pep == true", points: 30 },
          { when: 'has(customer.attributes.tier) && customer.attributes.tier == "gold"', points: -10 },
        ],
        bands: [
          { minScore: -10, decision: "approved" },
          { minScore: 50, decision: "in_review" },
          { minScore: 80, decision: "declined" },
        ],
        output: { score: "nodes.risk.score", provider: "nodes.verify" },
      },
      { id: "review", type: "decision", decision: "in_review" },
      {
        id: "approve",
        type: "decision",
        cases: [{ when: "payload.amount < 10", decision: "approved" }],
        default: "in_review",
        output: { amount: "payload.amount" },
      },
    ],
  };
}

async function submit(definition: unknown) {
  return h.app.inject({
    method: "POST",
    url: `/admin/tenants/${tenantId}/workflows/checked/versions`,
    headers: adminHeaders,
    payload: definition as never,
  });
}

async function problemsOf(definition: unknown): Promise<Array<{ path: string; message: string }>> {
  const res = await submit(definition);
  expect(res.statusCode, res.body).toBe(400);
  return res.json().details;
}

it("accepts a definition using every node type, and compiles it", async () => {
  const res = await submit(full());
  expect(res.statusCode, res.body).toBe(201);
  const compiled = await getCompiledWorkflow(
    h.ctx.nodeTypes,
    h.ctx.db.root,
    tenantId,
    "checked",
    res.json().version,
  );
  expect([...(compiled?.nodes.values() ?? [])].map((n) => n.type)).toEqual([
    "rules",
    "notify",
    "external_callback",
    "information_request",
    "provider",
    "score",
    "decision",
    "decision",
  ]);
});

/** Each case: how to break the definition, and a problem that must then be reported. */
const cases: Array<[string, (d: Json) => void, { path: string; message: string | RegExp }]> = [
  [
    "an unknown node type",
    (d) => {
      d.nodes[6].type = "frobnicate";
    },
    {
      path: "nodes[6].type",
      message: /^unknown node type "frobnicate": must be one of: "rules", "decision"/,
    },
  ],
  [
    "duplicate node ids",
    (d) => {
      d.nodes[6].id = "approve";
    },
    { path: "nodes[7].id", message: 'duplicates the id "approve" of nodes[6]' },
  ],
  [
    "an unknown start",
    (d) => (d.start = "nowhere"),
    { path: "start", message: 'refers to unknown node "nowhere"' },
  ],
  ["a missing next", (d) => delete d.nodes[1].next, { path: "nodes[1].next", message: "is required" }],
  [
    "a dangling next",
    (d) => (d.nodes[1].next = "ghost"),
    { path: "nodes[1].next", message: 'refers to unknown node "ghost"' },
  ],
  [
    "a dangling rule next",
    (d) => (d.nodes[0].rules[0].next = "ghost"),
    { path: "nodes[0].rules[0].next", message: 'refers to unknown node "ghost"' },
  ],
  [
    "a missing default",
    (d) => delete d.nodes[0].default,
    { path: "nodes[0].default", message: "is required" },
  ],
  [
    "a dangling default",
    (d) => (d.nodes[0].default = "ghost"),
    { path: "nodes[0].default", message: 'refers to unknown node "ghost"' },
  ],
  [
    "a dangling onTimeout",
    (d) => (d.nodes[2].onTimeout = "ghost"),
    { path: "nodes[2].onTimeout", message: 'refers to unknown node "ghost"' },
  ],
  [
    "a dangling onExpired",
    (d) => (d.nodes[3].onExpired = "ghost"),
    { path: "nodes[3].onExpired", message: 'refers to unknown node "ghost"' },
  ],
  [
    "a dangling onCancelled",
    (d) => (d.nodes[3].onCancelled = "ghost"),
    { path: "nodes[3].onCancelled", message: 'refers to unknown node "ghost"' },
  ],
  [
    "an unreachable node",
    (d) => d.nodes.push({ id: "orphan", type: "decision", decision: "approved" }),
    { path: "nodes[8]", message: 'node "orphan" is unreachable from start "route"' },
  ],
  [
    "a cycle",
    (d) => (d.nodes[4].next = "notify"),
    { path: "nodes[4].next", message: "closes a cycle: notify → callback → ask → verify → notify" },
  ],
  [
    "a node continuing to itself",
    (d) => (d.nodes[1].next = "notify"),
    { path: "nodes[1].next", message: "closes a cycle: notify → notify" },
  ],
  [
    "an expression that does not compile",
    (d) => (d.nodes[0].rules[0].when = "payload.amount >"),
    { path: "nodes[0].rules[0].when", message: /^does not compile: Unexpected token: EOF/ },
  ],
  [
    "an expression over an undeclared variable",
    (d) => (d.nodes[0].rules[0].when = "amount > 1000"),
    { path: "nodes[0].rules[0].when", message: /^does not type-check: Unknown variable: amount/ },
  ],
  [
    "an expression that does not type-check",
    (d) => (d.nodes[1].output.amount = "case.id + 1"),
    { path: "nodes[1].output.amount", message: /^does not type-check: no such overload: string \+ int/ },
  ],
  [
    "an unknown field of case",
    (d) => (d.nodes[2].payload.caseId = "case.identifier"),
    { path: "nodes[2].payload.caseId", message: /^does not type-check: No such key: identifier/ },
  ],
  [
    "a condition that is statically a string",
    (d) => (d.nodes[0].rules[0].when = '"yes"'),
    { path: "nodes[0].rules[0].when", message: "must be a boolean condition, but its type is string" },
  ],
  [
    "a condition that is statically a number",
    (d) => (d.nodes[5].rules[0].when = "1 + 2"),
    { path: "nodes[5].rules[0].when", message: "must be a boolean condition, but its type is int" },
  ],
  [
    "a decision case that is not a condition",
    (d) => (d.nodes[7].cases[0].when = "size(payload)"),
    { path: "nodes[7].cases[0].when", message: "must be a boolean condition, but its type is int" },
  ],
  [
    "an information request text that is not a string",
    (d) => (d.nodes[3].to = "payload.amount > 3"),
    { path: "nodes[3].to", message: "must be a string, but its type is bool" },
  ],
  [
    "an output without a JSON form",
    (d) => (d.nodes[1].output.raw = 'b"abc"'),
    {
      path: "nodes[1].output.raw",
      message: "has type bytes, which has no JSON form; convert it with string()",
    },
  ],
  [
    "a read of an unknown node",
    (d) => (d.nodes[7].output.x = "nodes.ghost.y"),
    { path: "nodes[7].output.x", message: 'reads nodes.ghost, but there is no node "ghost"' },
  ],
  [
    "a read of a node that never runs before",
    (d) => (d.nodes[0].rules[0].when = "nodes.callback.ok == true"),
    {
      path: "nodes[0].rules[0].when",
      message: 'reads nodes.callback, but node "callback" never runs before this node',
    },
  ],
  [
    "a node reading its own output",
    (d) => (d.nodes[5].rules[0].when = "nodes.risk.score > 3"),
    {
      path: "nodes[5].rules[0].when",
      message: "reads nodes.risk, the output of this very node, which it does not have yet",
    },
  ],
  [
    "an input schema with a wrong type name",
    (d) => (d.inputSchema.properties.amount.type = "numbr"),
    { path: "inputSchema.properties.amount.type", message: /^must be one of: "array", "boolean"/ },
  ],
  [
    "an input schema keyword of the wrong type",
    (d) => (d.inputSchema.properties.email.minLength = "3"),
    { path: "inputSchema.properties.email.minLength", message: "must be an integer" },
  ],
  [
    "an input schema with an unknown keyword",
    (d) => (d.inputSchema.propertys = {}),
    { path: "inputSchema", message: /unknown keyword: "propertys"/ },
  ],
  [
    "an input schema with an unknown format",
    (d) => (d.inputSchema.properties.email.format = "emial"),
    { path: "inputSchema", message: /unknown format "emial"/ },
  ],
  [
    "an input schema of another draft",
    (d) => (d.inputSchema.$schema = "http://json-schema.org/draft-07/schema#"),
    { path: "inputSchema.$schema", message: /JSON Schema 2020-12/ },
  ],
  [
    "an input schema with a reference it cannot resolve",
    (d) => (d.inputSchema.properties.amount = { $ref: "https://example.com/amount.json" }),
    { path: "inputSchema", message: /can't resolve reference/ },
  ],
  [
    "an asynchronous input schema",
    (d) => (d.inputSchema.$async = true),
    { path: "inputSchema.$async", message: "is not supported" },
  ],
  ["a missing input schema", (d) => delete d.inputSchema, { path: "inputSchema", message: "is required" }],
  [
    "a decision node with neither a decision nor cases",
    (d) => delete d.nodes[6].decision,
    { path: "nodes[6]", message: "needs a fixed decision, or cases with a default" },
  ],
  [
    "a decision node with cases and no default",
    (d) => delete d.nodes[7].default,
    { path: "nodes[7].default", message: "is required with cases: it decides when no case holds" },
  ],
  [
    "a decision node with a default and no cases",
    (d) => delete d.nodes[7].cases,
    { path: "nodes[7].cases", message: "is required with default" },
  ],
  [
    "a decision node with both a decision and cases",
    (d) => (d.nodes[7].decision = "approved"),
    { path: "nodes[7].decision", message: "a fixed decision excludes cases and default" },
  ],
  [
    "a decision value outside approved, declined, in_review",
    (d) => (d.nodes[6].decision = "maybe"),
    { path: "nodes[6].decision", message: 'must be one of: "approved", "declined", "in_review"' },
  ],
  [
    "a score node without bands",
    (d) => delete d.nodes[5].bands,
    { path: "nodes[5].bands", message: "is required" },
  ],
  [
    "a score node with no band",
    (d) => (d.nodes[5].bands = []),
    { path: "nodes[5].bands", message: "must have at least 1 item" },
  ],
  [
    "a score node with a repeated band",
    (d) => (d.nodes[5].bands[2].minScore = 50),
    { path: "nodes[5].bands[2].minScore", message: "repeats the minScore 50" },
  ],
  [
    "a score node whose lowest score no band covers",
    (d) => (d.nodes[5].bands[0].minScore = 0),
    {
      path: "nodes[5].bands",
      message: "no band covers the lowest possible score -10; the lowest minScore must be at most -10",
    },
  ],
  [
    "awaitResponse without expiresInSeconds",
    (d) => delete d.nodes[3].expiresInSeconds,
    { path: "nodes[3].expiresInSeconds", message: "is required when awaitResponse is true" },
  ],
  [
    "onExpired without awaitResponse",
    (d) => delete d.nodes[3].awaitResponse,
    { path: "nodes[3].onExpired", message: "is only taken when awaitResponse is true" },
  ],
  [
    "expiresInSeconds of 0",
    (d) => (d.nodes[2].expiresInSeconds = 0),
    { path: "nodes[2].expiresInSeconds", message: "must be at least 1" },
  ],
  [
    "expiresInSeconds beyond 90 days",
    (d) => (d.nodes[3].expiresInSeconds = 7_776_001),
    { path: "nodes[3].expiresInSeconds", message: "must be at most 7776000" },
  ],
  [
    "fractional expiresInSeconds",
    (d) => (d.nodes[2].expiresInSeconds = 1.5),
    { path: "nodes[2].expiresInSeconds", message: "must be an integer" },
  ],
  [
    "points out of range",
    (d) => (d.nodes[5].rules[0].points = 1e9),
    { path: "nodes[5].rules[0].points", message: "must be at most 1000000" },
  ],
  [
    "a minScore out of range",
    (d) => (d.nodes[5].bands[2].minScore = -2e6),
    { path: "nodes[5].bands[2].minScore", message: "must be at least -1000000" },
  ],
  [
    "points that are not a number",
    (d) => (d.nodes[5].rules[0].points = "50"),
    { path: "nodes[5].rules[0].points", message: "must be a number" },
  ],
  [
    "a cc that is not an address",
    (d) => (d.nodes[3].cc = ["not-an-address"]),
    { path: "nodes[3].cc[0]", message: "must be a valid email" },
  ],
  [
    "an output key that rules cannot read",
    (d) => (d.nodes[1].output["risk-level"] = '"high"'),
    {
      path: 'nodes[1].output["risk-level"]',
      message: /^is not an allowed key: must be 1 to 64 letters, digits or underscores/,
    },
  ],
  [
    "a node id that is not an identifier",
    (d) => (d.nodes[6].id = "in review"),
    {
      path: "nodes[6].id",
      message: "must be 1 to 64 letters, digits, '_' or '-', starting with a letter or '_'",
    },
  ],
  [
    "a webhook key no webhook configuration can have",
    (d) => (d.nodes[1].webhookKey = "-alerts"),
    {
      path: "nodes[1].webhookKey",
      message: "must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit",
    },
  ],
  [
    "an unknown property of a node",
    (d) => (d.nodes[0].next = "approve"),
    { path: "nodes[0].next", message: "is not a known property" },
  ],
  [
    "an unknown top-level property",
    (d) => (d.version = 3),
    { path: "version", message: "is not a known property" },
  ],
  [
    "an empty expression",
    (d) => (d.nodes[1].output.amount = ""),
    { path: "nodes[1].output.amount", message: "must not be empty" },
  ],
  [
    "an overlong expression",
    (d) => (d.nodes[1].output.amount = `payload.amount${" + 1".repeat(1100)}`),
    { path: "nodes[1].output.amount", message: "must be at most 4096 characters" },
  ],
  ["no nodes", (d) => (d.nodes = []), { path: "nodes", message: "must have at least 1 item" }],
  ["nodes that are not a list", (d) => (d.nodes = {}), { path: "nodes", message: "must be an array" }],
];

describe("a definition is refused with 400 naming", () => {
  it.each(cases)("%s", async (_, breakIt, expected) => {
    const definition = full();
    breakIt(definition);
    const problems = await problemsOf(definition);
    expect(problems).toContainEqual({
      path: expected.path,
      message:
        typeof expected.message === "string" ? expected.message : expect.stringMatching(expected.message),
    });
  });
});

it("reports every problem of a definition at once, the error summarising them", async () => {
  const d = full();
  d.nodes[0].rules[0].when = "payload.amount >";
  d.nodes[2].onTimeout = "ghost";
  d.nodes[4].onTimeout = "notify";
  d.nodes[5].bands = [];
  d.nodes[6].type = "frobnicate";
  d.nodes[3].to = "1";
  delete d.nodes[3].expiresInSeconds;
  d.inputSchema.properties.amount.type = "numbr";
  d.nodes.push({ id: "orphan", type: "decision", decision: "approved" });
  const res = await submit(d);
  expect(res.statusCode).toBe(400);
  const body = res.json();
  expect(body.details.map((p: { path: string }) => p.path).sort()).toEqual(
    [
      "nodes[0].rules[0].when",
      "nodes[2].onTimeout",
      "nodes[4].onTimeout",
      "nodes[5].bands",
      "nodes[6].type",
      "nodes[3].to",
      "nodes[3].expiresInSeconds",
      "inputSchema.properties.amount.type",
      "nodes[8]",
    ].sort(),
  );
  expect(body.error).toBe(
    `the workflow definition has 9 problems; the first: ${body.details[0].path} ${body.details[0].message}`,
  );
  // Nothing was created.
  const listed = await h.app.inject({
    method: "GET",
    url: `/admin/tenants/${tenantId}/workflows`,
    headers: adminHeaders,
  });
  expect(
    listed.json().workflows.find((w: { workflowId: string }) => w.workflowId === "checked").versions,
  ).toHaveLength(1);
});

it("reports a definition's single problem in the error itself", async () => {
  const d = full();
  d.start = "nowhere";
  const res = await submit(d);
  expect(res.json()).toEqual({
    error: 'the workflow definition has a problem; the first: start refers to unknown node "nowhere"',
    code: "invalid_request",
    details: [{ path: "start", message: 'refers to unknown node "nowhere"' }],
  });
});

it("accepts a rules node reading a node that runs on only some paths before it", async () => {
  const d = full();
  // `review` follows callback, ask and verify (by their timeouts) but not route: has() guards it.
  d.nodes[6] = {
    id: "review",
    type: "decision",
    decision: "in_review",
    output: { callback: 'has(nodes.callback) ? "answered" : "none"' },
  };
  expect((await submit(d)).statusCode).toBe(201);
});
