import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DecisionNode } from "../src/modules/engine/nodes/decision.node.js";
import type { ExternalCallbackNode } from "../src/modules/engine/nodes/external-callback.node.js";
import type { NotifyNode } from "../src/modules/engine/nodes/notify.node.js";
import type { RulesNode } from "../src/modules/engine/nodes/rules.node.js";
import type { ScoreNode } from "../src/modules/engine/nodes/score.node.js";
import type { ProviderNode } from "../src/modules/providers/provider.node.js";
import type { InformationRequestNode } from "../src/modules/rfi/information-request.node.js";
import type { CompiledWorkflow } from "../src/modules/workflows/workflow.compiler.js";
import {
  type CompiledNode,
  ExpressionError,
  type ExpressionVariables,
} from "../src/modules/workflows/workflow.types.js";
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

let counter = 0;

/** Creates the definition as a new workflow through the operator API, and compiles it. */
async function compile(definition: unknown): Promise<CompiledWorkflow> {
  const workflowId = `w${++counter}`;
  const res = await h.app.inject({
    method: "POST",
    url: `/admin/tenants/${tenantId}/workflows/${workflowId}/versions`,
    headers: adminHeaders,
    payload: definition as never,
  });
  expect(res.statusCode, res.body).toBe(201);
  const compiled = await getCompiledWorkflow(h.ctx.nodeTypes, h.ctx.db.root, tenantId, workflowId, 1);
  if (!compiled) throw new Error("the version just created did not compile");
  return compiled;
}

function vars(
  payload: Record<string, unknown>,
  more: Partial<ExpressionVariables> = {},
): ExpressionVariables {
  return {
    payload,
    subject: {},
    metadata: {},
    case: { id: "c-1", type: "Transaction", externalCustomerId: null },
    customer: { attributes: {} },
    nodes: {},
    ...more,
  };
}

/** The compiled form of each node type, as its node type module declares it. */
interface CompiledNodes {
  rules: RulesNode;
  decision: DecisionNode;
  score: ScoreNode;
  notify: NotifyNode;
  external_callback: ExternalCallbackNode;
  information_request: InformationRequestNode;
  provider: ProviderNode;
}

function node<T extends keyof CompiledNodes>(wf: CompiledWorkflow, id: string, type: T): CompiledNodes[T] {
  const n: CompiledNode | undefined = wf.nodes.get(id);
  if (n?.type !== type) throw new Error(`node ${id} is not a ${type} node`);
  return n as unknown as CompiledNodes[T];
}

/** One decision node whose output holds the given expressions, plus conditions to test. */
async function expressions(output: Record<string, string>, conditions: string[] = []) {
  const done = { id: "done", type: "decision", decision: "approved", output };
  const check = {
    id: "check",
    type: "rules",
    rules: conditions.map((when) => ({ when, next: "done" })),
    default: "done",
  };
  const wf = await compile(
    conditions.length > 0
      ? { inputSchema: {}, start: "check", nodes: [check, done] }
      : { inputSchema: {}, start: "done", nodes: [done] },
  );
  return {
    output: node(wf, "done", "decision").output,
    conditions: conditions.length > 0 ? node(wf, "check", "rules").rules.map((r) => r.when) : [],
  };
}

function expressionError(fn: () => unknown): ExpressionError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ExpressionError);
    return err as ExpressionError;
  }
  throw new Error("expected an ExpressionError");
}

/** Fails on anything JSON.parse could not have produced. */
function assertPlainJson(value: unknown): void {
  expect(JSON.parse(JSON.stringify(value))).toEqual(value);
  const walk = (v: unknown): void => {
    expect(["string", "number", "boolean", "object"]).toContain(typeof v);
    if (v !== null && typeof v === "object") {
      expect([Object.prototype, Array.prototype]).toContain(Object.getPrototypeOf(v));
      for (const x of Object.values(v)) walk(x);
    }
  };
  walk(value);
}

describe("numbers", () => {
  it("compares JSON numbers with integer literals whether or not they carry a fraction", async () => {
    const { conditions } = await expressions({}, ["payload.amount > 1000"]);
    const [over] = conditions as [NonNullable<(typeof conditions)[0]>];
    expect(over.test(vars({ amount: 1500 }))).toBe(true);
    expect(over.test(vars({ amount: 1500.5 }))).toBe(true);
    expect(over.test(vars({ amount: 1000 }))).toBe(false);
    expect(over.test(vars({ amount: 999.99 }))).toBe(false);
  });

  it("mixes integer literals and JSON numbers in arithmetic, and keeps integer arithmetic among literals", async () => {
    const { output, conditions } = await expressions(
      {
        doubled: "payload.amount * 2",
        plus: "payload.amount + 100",
        less: "payload.amount - 1",
        half: "payload.amount / 2",
        literal: "7 / 2",
        fraction: "7.0 / 2",
        weighted: "size(payload.items) * 1.5",
        parity: "int(payload.count) % 2",
      },
      [
        "payload.amount * 2 > 3000",
        "payload.count == 3",
        'payload.country in ["IR", "KP"]',
        "payload.count in [1, 2, 3]",
      ],
    );
    const v = vars({ amount: 1500.5, count: 3, country: "IR", items: [1, 2] });
    expect(output.evaluate(v)).toEqual({
      doubled: 3001,
      plus: 1600.5,
      less: 1499.5,
      half: 750.25,
      literal: 3,
      fraction: 3.5,
      weighted: 3,
      parity: 1,
    });
    expect(conditions.map((c) => c.test(v))).toEqual([true, true, true, true]);
    expect(conditions.map((c) => c.test(vars({ amount: 1500, count: 4, country: "FR", items: [] })))).toEqual(
      [false, false, false, false],
    );
  });
});

describe("missing keys and run-time errors", () => {
  it("makes a missing key an ExpressionError naming the node and the expression, unless has() guards it", async () => {
    const { conditions } = await expressions({}, ["payload.foo > 3", "has(payload.foo) && payload.foo > 3"]);
    const [bare, guarded] = conditions as [(typeof conditions)[0] & object, (typeof conditions)[0] & object];
    const err = expressionError(() => bare.test(vars({ amount: 1 })));
    expect(err.nodeId).toBe("check");
    expect(err.expression).toBe("payload.foo > 3");
    expect(err.message).toBe("node check: expression `payload.foo > 3` failed: No such key: foo");
    expect(guarded.test(vars({ amount: 1 }))).toBe(false);
    expect(guarded.test(vars({ foo: 4 }))).toBe(true);
  });

  it("makes a condition that gives no boolean at run time an ExpressionError", async () => {
    const { conditions } = await expressions({}, ["payload.flag"]);
    expect(conditions[0]?.test(vars({ flag: true }))).toBe(true);
    expect(expressionError(() => conditions[0]?.test(vars({ flag: "yes" }))).message).toMatch(
      /the condition gave string, not a boolean/,
    );
  });

  it("makes a type mismatch in the data an ExpressionError", async () => {
    const { conditions } = await expressions({}, ["payload.amount > 1000"]);
    expect(expressionError(() => conditions[0]?.test(vars({ amount: "1500" }))).message).toMatch(
      /no such overload/,
    );
  });

  it("refuses results JSON cannot hold", async () => {
    const { output } = await expressions({ big: "9223372036854775807" });
    expect(expressionError(() => output.evaluate(vars({}))).message).toMatch(/beyond ±2\^53/);
    const inf = await expressions({ inf: "payload.amount / 0" });
    expect(expressionError(() => inf.output.evaluate(vars({ amount: 1 }))).message).toMatch(
      /not a finite number/,
    );
    // Its type known only at run time, a duration passes creation and fails when evaluated.
    const duration = await expressions({ d: 'dyn(duration("1h"))' });
    expect(expressionError(() => duration.output.evaluate(vars({}))).message).toMatch(/no JSON form/);
  });
});

describe("outputs", () => {
  it("come back as plain JSON: numbers, objects, lists, strings, booleans, null, timestamps", async () => {
    const { output } = await expressions({
      count: "size(payload.items)",
      amount: "payload.amount",
      nested: '{"a": 1, "b": [1, "two", 3.5], "c": {"d": null}}',
      list: "payload.items.map(i, i * 2)",
      label: 'payload.currency + " " + string(payload.amount)',
      flag: "payload.amount > 10",
      nothing: "null",
      when: 'timestamp("2024-05-01T10:00:00Z")',
      unsigned: "3u",
      whole: "payload",
    });
    const payload = { amount: 12.5, currency: "EUR", items: [1, 2.5] };
    const result = output.evaluate(vars(payload));
    expect(result).toEqual({
      count: 2,
      amount: 12.5,
      nested: { a: 1, b: [1, "two", 3.5], c: { d: null } },
      list: [2, 5],
      label: "EUR 12.5",
      flag: true,
      nothing: null,
      when: "2024-05-01T10:00:00.000Z",
      unsigned: 3,
      whole: payload,
    });
    assertPlainJson(result);
    expect(output.keys).toEqual([
      "count",
      "amount",
      "nested",
      "list",
      "label",
      "flag",
      "nothing",
      "when",
      "unsigned",
      "whole",
    ]);
  });

  it("read case, subject, metadata, customer attributes and finished nodes' outputs", async () => {
    const wf = await compile({
      inputSchema: {},
      start: "cb",
      nodes: [
        { id: "cb", type: "external_callback", payload: { caseId: "case.id" }, next: "assess" },
        {
          id: "assess",
          type: "rules",
          rules: [{ when: 'nodes.cb.verdict == "clear" && nodes.cb.score < 0.5', next: "done" }],
          default: "done",
        },
        {
          id: "done",
          type: "decision",
          decision: "approved",
          output: {
            verdict: "nodes.cb.verdict",
            caseId: "case.id",
            type: "case.type",
            customerId: "case.externalCustomerId",
            hasCustomer: "case.externalCustomerId != null",
            tier: "customer.attributes.tier",
            lastName: "subject.person.lastName",
            channel: "metadata.channel",
          },
        },
      ],
    });
    const v = vars(
      {},
      {
        case: { id: "c-9", type: "KYC", externalCustomerId: "cust-1" },
        customer: { attributes: { tier: "gold" } },
        subject: { person: { lastName: "Lovelace" } },
        metadata: { channel: "web" },
        nodes: { cb: { verdict: "clear", score: 0.2 } },
      },
    );
    expect(node(wf, "cb", "external_callback").payload.evaluate(v)).toEqual({ caseId: "c-9" });
    expect(node(wf, "assess", "rules").rules[0]?.when.test(v)).toBe(true);
    expect(node(wf, "done", "decision").output.evaluate(v)).toEqual({
      verdict: "clear",
      caseId: "c-9",
      type: "KYC",
      customerId: "cust-1",
      hasCustomer: true,
      tier: "gold",
      lastName: "Lovelace",
      channel: "web",
    });
    const before = expressionError(() =>
      node(wf, "assess", "rules").rules[0]?.when.test({ ...v, nodes: {} }),
    );
    expect(before.message).toMatch(/No such key: cb/);
  });
});

describe("compiled nodes", () => {
  it("carry every field the engine needs, with defaults filled in", async () => {
    const wf = await compile({
      inputSchema: {},
      start: "notify",
      nodes: [
        { id: "notify", type: "notify", output: { n: "1" }, next: "cb" },
        { id: "cb", type: "external_callback", next: "ask" },
        {
          id: "ask",
          type: "information_request",
          to: '"a@example.com"',
          subject: '"s"',
          body: "payload.text",
          next: "verify",
        },
        { id: "verify", type: "provider", provider: "opensanctions", next: "risk" },
        {
          id: "risk",
          type: "score",
          rules: [
            { when: "payload.amount > 100", points: 30 },
            { when: "true", points: 5 },
          ],
          bands: [
            { minScore: 30, decision: "in_review" },
            { minScore: 0, decision: "approved" },
            { minScore: 60, decision: "declined" },
          ],
          output: { score: "nodes.risk.score", twice: "nodes.risk.score * 2" },
        },
      ],
    });
    expect(wf.start).toBe("notify");
    expect(node(wf, "notify", "notify")).toMatchObject({
      payloadType: undefined,
      tag: undefined,
      webhookKey: undefined,
      next: "cb",
    });
    expect(node(wf, "cb", "external_callback")).toMatchObject({
      expiresInSeconds: 86_400,
      onTimeout: undefined,
      next: "ask",
    });
    expect(node(wf, "cb", "external_callback").payload.evaluate(vars({}))).toEqual({});
    const ask = node(wf, "ask", "information_request");
    expect(ask).toMatchObject({
      awaitResponse: false,
      expiresInSeconds: undefined,
      cc: undefined,
      next: "verify",
    });
    expect(ask.body.evaluate(vars({ text: "Please send documents" }))).toBe("Please send documents");
    expect(expressionError(() => ask.body.evaluate(vars({ text: 3 }))).message).toMatch(
      /gave number, not a string/,
    );
    expect(node(wf, "verify", "provider")).toMatchObject({
      provider: "opensanctions",
      config: {},
      onTimeout: undefined,
    });
    const risk = node(wf, "risk", "score");
    expect(risk.bands.map((b) => b.minScore)).toEqual([60, 30, 0]);
    expect(risk.rules.map((r) => [r.when.test(vars({ amount: 150 })), r.points])).toEqual([
      [true, 30],
      [true, 5],
    ]);
    expect(risk.output.evaluate(vars({}, { nodes: { risk: { score: 35 } } }))).toEqual({
      score: 35,
      twice: 70,
    });
  });
});

describe("validatePayload", () => {
  it("answers no problems for a valid payload and every failing path for another", async () => {
    const wf = await compile({
      inputSchema: {
        type: "object",
        required: ["amount", "email"],
        properties: {
          amount: { type: "number", minimum: 0 },
          email: { type: "string", format: "email" },
          items: {
            type: "array",
            items: { type: "object", required: ["sku"], properties: { sku: { type: "string" } } },
          },
        },
        additionalProperties: false,
      },
      start: "done",
      nodes: [{ id: "done", type: "decision", decision: "approved" }],
    });
    expect(
      await wf.validatePayload({ amount: 10, email: "a@example.com", items: [{ sku: "x" }] }, 250),
    ).toEqual([]);
    const problems = await wf.validatePayload({ amount: -1, email: "nope", items: [{}], extra: 1 }, 250);
    expect(problems.sort((a, b) => a.path.localeCompare(b.path))).toEqual([
      { path: "payload.amount", message: "must be at least 0" },
      { path: "payload.email", message: "must be a valid email" },
      { path: "payload.extra", message: "is not a known property" },
      { path: "payload.items[0].sku", message: "is required" },
    ]);
    expect(await wf.validatePayload({ email: "a@example.com" }, 250)).toEqual([
      { path: "payload.amount", message: "is required" },
    ]);
  });
});

/** The JSON block that follows `<!-- example: name -->` in docs/workflows.md. */
function docExample(name: string): Record<string, unknown> {
  const doc = fs.readFileSync(new URL("../docs/workflows.md", import.meta.url), "utf8");
  const match = new RegExp(`<!-- example: ${name} -->\\n\`\`\`json\\n([\\s\\S]*?)\\n\`\`\``).exec(doc);
  if (!match?.[1]) throw new Error(`docs/workflows.md has no example ${name}`);
  return JSON.parse(match[1]);
}

describe("the worked examples of docs/workflows.md", () => {
  it("the transaction screen declines sanctioned countries and scores the rest as documented", async () => {
    const wf = await compile(docExample("transaction-screen"));
    const sanctions = node(wf, "sanctions", "rules");
    const risk = node(wf, "risk", "score");
    const decide = (v: ExpressionVariables) => {
      const score = risk.rules.reduce((sum, r) => (r.when.test(v) ? sum + r.points : sum), 0);
      const band = risk.bands.find((b) => b.minScore <= score);
      return { decision: band?.decision, result: risk.output.evaluate({ ...v, nodes: { risk: { score } } }) };
    };
    const payment = { amount: 12500, currency: "EUR", country: "DE", newDevice: true };
    expect(await wf.validatePayload(payment, 250)).toEqual([]);
    expect(sanctions.rules[0]?.when.test(vars(payment))).toBe(false);
    expect(sanctions.rules[0]?.when.test(vars({ ...payment, country: "KP" }))).toBe(true);
    expect(decide(vars(payment))).toEqual({
      decision: "declined",
      result: { score: 85, amount: 12500, currency: "EUR" },
    });
    const trusted = vars(payment, { customer: { attributes: { trusted: true } } });
    expect(decide(trusted).decision).toBe("in_review");
    expect(decide(vars({ amount: 250, currency: "EUR", country: "FR" }))).toEqual({
      decision: "approved",
      result: { score: 0, amount: 250, currency: "EUR" },
    });
    expect((await wf.validatePayload({ amount: 0, currency: "eur" }, 250)).map((p) => p.path)).toEqual([
      "payload.country",
      "payload.amount",
      "payload.currency",
    ]);
  });

  it("the KYC flow decides on the callback's body as documented", async () => {
    const wf = await compile(docExample("kyc-callback"));
    const screening = node(wf, "screening", "external_callback");
    expect(screening).toMatchObject({
      webhookKey: "screening",
      expiresInSeconds: 3600,
      next: "assess",
      onTimeout: "manual",
    });
    const person = { firstName: "Ada", lastName: "Lovelace" };
    const base = vars(
      { applicantId: "app-7" },
      { case: { id: "c-1", type: "KYC", externalCustomerId: null }, subject: { person } },
    );
    expect(screening.payload.evaluate(base)).toEqual({ applicantId: "app-7", person });
    const assess = node(wf, "assess", "rules");
    const route = (body: Record<string, unknown>) => {
      const v = { ...base, nodes: { screening: body } };
      return assess.rules.find((r) => r.when.test(v))?.next ?? assess.default;
    };
    const clear = { sanctionsHit: false, pepHit: false, matchScore: 0.2, reference: "scr-1" };
    expect(route(clear)).toBe("accept");
    expect(node(wf, "accept", "decision").output.evaluate({ ...base, nodes: { screening: clear } })).toEqual({
      reference: "scr-1",
      matchScore: 0.2,
    });
    expect(route({ ...clear, matchScore: 0.9 })).toBe("manual");
    expect(route({ ...clear, sanctionsHit: true })).toBe("reject");
    expect(node(wf, "manual", "decision").output.evaluate(base)).toEqual({ screened: false });
  });

  it("the refused definition answers exactly as documented", async () => {
    const res = await h.app.inject({
      method: "POST",
      url: `/admin/tenants/${tenantId}/workflows/refused/versions`,
      headers: adminHeaders,
      payload: {
        inputSchema: {},
        start: "screen",
        nodes: [
          {
            id: "screen",
            type: "rules",
            rules: [{ when: "payload.amount >", next: "done" }],
            default: "done",
          },
          { id: "done", type: "notify", output: {}, next: "ghost" },
          { id: "orphan", type: "decision", decision: "approved" },
        ],
      },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual(docExample("refused"));
  });
});

describe("what a version reads", () => {
  it("knows whether any expression names the customer, whose attributes are read only then", async () => {
    const decide = (output: Record<string, string>, when = "true") => ({
      inputSchema: {},
      start: "check",
      nodes: [
        { id: "check", type: "rules", rules: [{ when, next: "done" }], default: "done" },
        { id: "done", type: "decision", decision: "approved", output },
      ],
    });
    expect((await compile(decide({ n: "payload.amount" }))).readsCustomer).toBe(false);
    // The name of a comprehension's variable is not the customer.
    expect((await compile(decide({}, "[1, 2].exists(c, c > 1)"))).readsCustomer).toBe(false);
    expect((await compile(decide({}, "customer.attributes.vip == true"))).readsCustomer).toBe(true);
    expect((await compile(decide({ a: "has(customer.attributes.segment)" }))).readsCustomer).toBe(true);
    expect((await compile(decide({ a: "size(customer.attributes)" }))).readsCustomer).toBe(true);
  });
});
