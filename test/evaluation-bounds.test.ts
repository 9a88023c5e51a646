import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WorkflowDefinition } from "../src/modules/workflows/workflow.types.js";
import { createTestApp, type TestApp } from "./support/app.js";
import { adminHeaders, createPartner, type Partner } from "./support/fixtures.js";
import { createWorkflow, kycSubject, waitForCase } from "./support/workflows.js";

/**
 * Contract section 4: no tenant's workflow or payload can hold the event loop. Expressions run on
 * a budget, regular expressions on RE2, and definitions have hard size limits.
 */

let h: TestApp;
let partner: Partner;

beforeAll(async () => {
  // These tests are about the budget: a deadline far off keeps a slow machine from reaching it first.
  h = await createTestApp({ evaluationDeadlineMs: 60_000 });
  await h.startWorker();
  partner = await createPartner(h.app);
});
afterAll(async () => h?.close());

const hundred = `[${Array.from({ length: 100 }, (_, i) => i).join(",")}]`;
/** The rule the attack used: 10^8 iterations in 1,211 characters. */
const fourLevels = `${hundred}.all(a0, ${hundred}.all(a1, ${hundred}.all(a2, ${hundred}.all(a3, a3 >= 0))))`;

function oneRule(
  when: string,
  inputSchema: Record<string, unknown> = { type: "object" },
): WorkflowDefinition {
  return {
    inputSchema,
    start: "check",
    nodes: [
      { id: "check", type: "rules", rules: [{ when, next: "yes" }], default: "no" },
      { id: "yes", type: "decision", decision: "approved" },
      { id: "no", type: "decision", decision: "declined" },
    ],
  };
}

async function submit(workflowId: string, payload: unknown) {
  return h.app.inject({
    method: "POST",
    url: "/cases",
    headers: partner.headers,
    payload: { workflowId, type: "KYC", payload, subject: kycSubject },
  });
}

async function settle(workflowId: string, payload: unknown) {
  const res = await submit(workflowId, payload);
  expect(res.statusCode, res.body).toBe(201);
  return waitForCase(h.app, partner.headers, res.json().caseId);
}

function createVersion(workflowId: string, definition: unknown) {
  return h.app.inject({
    method: "POST",
    url: `/admin/tenants/${partner.tenantId}/workflows/${workflowId}/versions`,
    headers: adminHeaders,
    payload: definition as Record<string, unknown>,
  });
}

describe("the expression budget", () => {
  it("a rule of nested comprehensions fails the case with a budget error instead of running on", async () => {
    await createWorkflow(h.app, partner.tenantId, "loops", oneRule(fourLevels));
    const record = await settle("loops", {});
    expect(record.status).toBe("failed");
    expect(record.error).toMatchObject({
      nodeId: "check",
      message: expect.stringMatching(/evaluation budget/),
    });
  });

  it("an exhausted budget fails the case even where `||` would absorb the error", async () => {
    await createWorkflow(h.app, partner.tenantId, "absorbed", oneRule(`${fourLevels} || true`));
    const record = await settle("absorbed", {});
    expect(record.status).toBe("failed");
    expect(record.error.message).toMatch(/evaluation budget/);
  });

  it("a comprehension over a large payload list pays for each read of the list", async () => {
    await createWorkflow(h.app, partner.tenantId, "quadratic", oneRule("payload.l.all(x, x in payload.l)"));
    const small = await settle("quadratic", { l: Array.from({ length: 100 }, (_, i) => i) });
    expect(small.status).toBe("decided");
    expect(small.result.decision.value).toBe("approved");
    const large = await settle("quadratic", { l: Array.from({ length: 20_000 }, (_, i) => i) });
    expect(large.status).toBe("failed");
    expect(large.error.message).toMatch(/evaluation budget/);
  });

  it("the expressions of one node share the budget: many cheap-looking rules cannot add up past it", async () => {
    const rule = "payload.l.exists(x, x < 0)";
    const definition: WorkflowDefinition = {
      inputSchema: { type: "object" },
      start: "check",
      nodes: [
        {
          id: "check",
          type: "rules",
          rules: Array.from({ length: 100 }, () => ({ when: rule, next: "yes" })),
          default: "no",
        },
        { id: "yes", type: "decision", decision: "approved" },
        { id: "no", type: "decision", decision: "declined" },
      ],
    };
    await createWorkflow(h.app, partner.tenantId, "many", definition);
    // One rule alone costs about 5 units per element: 2,000 elements are well within the budget,
    // a hundred such rules are not.
    const record = await settle("many", { l: Array.from({ length: 2_000 }, (_, i) => i) });
    expect(record.status).toBe("failed");
    expect(record.error.message).toMatch(/evaluation budget/);
  });
});

describe("regular expressions run on RE2", () => {
  it("matches() with a pattern RE2 refuses (a backreference) is a validation error at creation", async () => {
    const res = await createVersion("backref", oneRule(`payload.s.matches("(a)\\\\1")`));
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().details).toEqual([
      expect.objectContaining({ path: "nodes[0].rules[0].when", message: expect.stringMatching(/RE2/) }),
    ]);
  });

  it("matches() with a hostile pattern from the payload decides; one RE2 refuses fails the case", async () => {
    await createWorkflow(h.app, partner.tenantId, "dynamic", oneRule("payload.s.matches(payload.re)"));
    const hostile = await settle("dynamic", { s: `${"a".repeat(29)}!`, re: "^(a+)+$" });
    expect(hostile.status).toBe("decided");
    expect(hostile.result.decision.value).toBe("declined");
    const lookahead = await settle("dynamic", { s: "ab", re: "a(?=b)" });
    expect(lookahead.status).toBe("failed");
    expect(lookahead.error.message).toMatch(/invalid regular expression/);
  });

  it("an input schema pattern that backtracks answers at once; one RE2 refuses is refused at creation", async () => {
    await createWorkflow(
      h.app,
      partner.tenantId,
      "pattern",
      oneRule("true", {
        type: "object",
        properties: { name: { type: "string", pattern: "^(a+)+$" } },
      }),
    );
    const res = await submit("pattern", { name: `${"a".repeat(30)}!` });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().details).toEqual([expect.objectContaining({ path: "payload.name" })]);
    const ok = await submit("pattern", { name: "aaaa" });
    expect(ok.statusCode, ok.body).toBe(201);

    const lookbehind = await createVersion(
      "lookbehind",
      oneRule("true", { type: "object", properties: { name: { type: "string", pattern: "(?<=a)b" } } }),
    );
    expect(lookbehind.statusCode, lookbehind.body).toBe(400);
    expect(lookbehind.json().details).toEqual([expect.objectContaining({ path: "inputSchema" })]);
  });
});

describe("regular expressions are paid for by program size × text length", () => {
  it("a pattern whose program is huge (a repetition count of 1000) is refused at creation, in a rule and in a schema", async () => {
    const rule = await createVersion("huge-re", oneRule(`payload.s.matches("(?:a?){1000}a{1000}$")`));
    expect(rule.statusCode, rule.body).toBe(400);
    expect(rule.json().details).toEqual([
      expect.objectContaining({
        path: "nodes[0].rules[0].when",
        message: expect.stringMatching(/instructions/),
      }),
    ]);
    const schema = await createVersion(
      "huge-pattern",
      oneRule("true", { type: "object", properties: { s: { type: "string", pattern: "a{1000}$" } } }),
    );
    expect(schema.statusCode, schema.body).toBe(400);
    expect(schema.json().details).toEqual([
      expect.objectContaining({ path: "inputSchema", message: expect.stringMatching(/instructions/) }),
    ]);
  });

  it("matches() of a large program over a long text fails the case on the budget, before matching", async () => {
    await createWorkflow(h.app, partner.tenantId, "costly-re", oneRule("payload.s.matches(payload.re)"));
    // 903 instructions × 60,000 characters: seconds of matching on main, refused here at once.
    const costly = await settle("costly-re", { s: "a".repeat(60_000), re: "(?:a?){300}a{300}$" });
    expect(costly.status).toBe("failed");
    expect(costly.error.message).toMatch(/evaluation budget/);
    const tooLong = await settle("costly-re", { s: "a".repeat(70_000), re: "b" });
    expect(tooLong.status).toBe("failed");
    expect(tooLong.error.message).toMatch(/at most 65536 characters/);
    const fine = await settle("costly-re", { s: "ada@example.com", re: "^[a-z]+@[a-z.]+$" });
    expect(fine.status).toBe("decided");
    expect(fine.result.decision.value).toBe("approved");
  });

  it("an input schema's patterns over a 500,000-character string refuse the payload with 400", async () => {
    await createWorkflow(
      h.app,
      partner.tenantId,
      "long-string",
      oneRule("true", { type: "object", properties: { s: { type: "string", pattern: "^[a-z]+$" } } }),
    );
    const long = await submit("long-string", { s: "a".repeat(500_000) });
    expect(long.statusCode, long.body.slice(0, 300)).toBe(400);
    expect(long.json().details).toEqual([
      expect.objectContaining({ path: "payload", message: expect.stringMatching(/patterns/) }),
    ]);
    const short = await submit("long-string", { s: "a".repeat(1_000) });
    expect(short.statusCode, short.body).toBe(201);
  });
});

describe("definition limits", () => {
  it("a definition of 10,000 nodes is 400 naming the limit, before any other check", async () => {
    const nodes = Array.from({ length: 10_000 }, (_, i) => ({
      id: `n${i}`,
      type: "rules",
      rules: [],
      default: i === 9_999 ? "end" : `n${i + 1}`,
    }));
    const res = await createVersion("huge", {
      inputSchema: { type: "object" },
      start: "n0",
      nodes: [...nodes, { id: "end", type: "decision", decision: "approved" }],
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().details).toEqual(
      expect.arrayContaining([{ path: "nodes", message: expect.stringMatching(/at most 500/) }]),
    );
  });

  it("an input schema nested 1,000 deep is 400 at the edge, and 33 deep is 400 at creation", async () => {
    const nest = (depth: number) => {
      let schema: Record<string, unknown> = { type: "string" };
      for (let i = 0; i < depth; i++) schema = { type: "array", items: schema };
      return schema;
    };
    const deep = `${'{"type":"array","items":'.repeat(1000)}{}${"}".repeat(1000)}`;
    const edge = await h.app.inject({
      method: "POST",
      url: `/admin/tenants/${partner.tenantId}/workflows/deep/versions`,
      headers: { ...adminHeaders, "content-type": "application/json" },
      payload: JSON.stringify(oneRule("true", { type: "object" })).replace('{"type":"object"}', deep),
    });
    expect(edge.statusCode, edge.body).toBe(400);

    const over = await createVersion("deep", oneRule("true", nest(32)));
    expect(over.statusCode, over.body).toBe(400);
    expect(over.json().details).toEqual([
      { path: "inputSchema", message: expect.stringMatching(/32 levels/) },
    ]);
    const within = await createVersion("deep", oneRule("true", nest(31)));
    expect(within.statusCode, within.body).toBe(201);
  });

  it("a definition over 256 KiB is 400", async () => {
    const res = await createVersion("large", {
      ...oneRule("true"),
      description: "x",
      nodes: [
        ...oneRule("true").nodes,
        ...Array.from({ length: 150 }, (_, i) => ({
          id: `pad${i}`,
          type: "decision",
          decision: "approved",
          output: { note: `'${"x".repeat(2000)}'` },
        })),
      ],
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().details).toEqual([
      { path: "(root)", message: expect.stringMatching(/at most 262144/) },
    ]);
  });
});

describe("built-in operations are paid for by what they cost", () => {
  it("duration() takes at most 64 characters: a longer literal is refused at creation, a longer payload text fails the case", async () => {
    const literal = await createVersion(
      "long-duration",
      oneRule(`duration("${"1".repeat(65)}") > duration("1s")`),
    );
    expect(literal.statusCode, literal.body).toBe(400);
    expect(literal.json().details).toEqual([
      expect.objectContaining({
        path: "nodes[0].rules[0].when",
        message: expect.stringContaining("duration() takes a text of at most 64 characters; this one has 65"),
      }),
    ]);

    await createWorkflow(
      h.app,
      partner.tenantId,
      "duration",
      oneRule('duration(payload.s) > duration("1s")'),
    );
    // cel-js parses a run of digits with no unit in time cubic in its length: hours for these.
    const digits = await settle("duration", { s: "1".repeat(20_000) });
    expect(digits.status).toBe("failed");
    expect(digits.error.message).toContain(
      "duration() takes a text of at most 64 characters; this one has 20000",
    );
    const fine = await settle("duration", { s: "1h30m" });
    expect(fine.status).toBe("decided");
    expect(fine.result.decision.value).toBe("approved");
  });

  it("`x in list` pays for each element it may compare, as deep as x: past the budget it fails the case", async () => {
    await createWorkflow(h.app, partner.tenantId, "member", oneRule("payload.x in payload.l"));
    const numbers = (n: number) => Array.from({ length: n }, (_, i) => i);
    // 60,000 comparisons: over one node's budget (the list's read alone is 7,500 units).
    const long = await settle("member", { x: -1, l: numbers(60_000) });
    expect(long.status).toBe("failed");
    expect(long.error.message).toContain("exceeded the evaluation budget");
    const short = await settle("member", { x: 999, l: numbers(1_000) });
    expect(short.status).toBe("decided");
    expect(short.result.decision.value).toBe("approved");

    await createWorkflow(h.app, partner.tenantId, "member-map", oneRule('{"a": payload.x} in payload.l'));
    // 12,000 maps, each compared as deep as the one looked for: 5 units an element.
    const maps = (n: number) => Array.from({ length: n }, (_, i) => ({ a: i }));
    const deep = await settle("member-map", { x: -1, l: maps(12_000) });
    expect(deep.status).toBe("failed");
    expect(deep.error.message).toContain("exceeded the evaluation budget");
    const shallow = await settle("member-map", { x: 5, l: maps(1_000) });
    expect(shallow.status).toBe("decided");
    expect(shallow.result.decision.value).toBe("approved");
  });

  it("`a == b` pays for the values of the smaller side: comparing large structures twice fails the case", async () => {
    await createWorkflow(h.app, partner.tenantId, "equal", oneRule("[1, 2].all(i, payload.a == payload.b)"));
    // 40,000 values on each side (20,000 lists of one number): 80,000 units for two comparisons.
    const nested = (n: number) => Array.from({ length: n }, (_, i) => [i]);
    const large = await settle("equal", { a: nested(20_000), b: nested(20_000) });
    expect(large.status).toBe("failed");
    expect(large.error.message).toContain("exceeded the evaluation budget");
    const small = await settle("equal", { a: nested(100), b: nested(100) });
    expect(small.status).toBe("decided");
    expect(small.result.decision.value).toBe("approved");
  });
});
