import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WorkflowDefinition } from "../src/modules/workflows/workflow.types.js";
import { metricsRegistry } from "../src/platform/metrics.js";
import { createTestApp, type TestApp } from "./support/app.js";
import { adminHeaders, createPartner, type Partner } from "./support/fixtures.js";
import { sample } from "./support/metrics.js";
import { createWorkflow, eventsOf, kycSubject, waitForCase } from "./support/workflows.js";

/**
 * Decision 0024: evaluation that is merely long moves to a thread and gives the outcome it would
 * have given inline. (An evaluation its estimate gets wrong ends at the deadline: see
 * evaluation-fairness.test.ts, whose budget is far above what the deadline allows.)
 */

/** Far above what the budget allows (a few milliseconds), so that a slow machine does not reach it. */
const DEADLINE_MS = 1_000;
let h: TestApp;
let hostile: Partner;

beforeAll(async () => {
  h = await createTestApp({ evaluationDeadlineMs: DEADLINE_MS });
  await h.startWorker();
  hostile = await createPartner(h.app);
});
afterAll(async () => h?.close());

function oneRule(
  when: string,
  inputSchema: Record<string, unknown> = { type: "object" },
): WorkflowDefinition {
  return {
    inputSchema,
    start: "check",
    nodes: [
      { id: "check", type: "rules", rules: [{ when, next: "yes" }], default: "no" },
      { id: "yes", type: "decision", decision: "approved", output: { seen: "size(payload.s)" } },
      { id: "no", type: "decision", decision: "declined" },
    ],
  };
}

async function submit(partner: Partner, workflowId: string, payload: unknown) {
  return h.app.inject({
    method: "POST",
    url: "/cases",
    headers: partner.headers,
    payload: { workflowId, type: "KYC", payload, subject: kycSubject },
  });
}

async function created(partner: Partner, workflowId: string, payload: unknown): Promise<string> {
  const res = await submit(partner, workflowId, payload);
  expect(res.statusCode, res.body).toBe(201);
  return res.json().caseId as string;
}

describe("an evaluation that moves to a thread", () => {
  it("gives the outcome it gives on the event loop, outputs and trace included", async () => {
    await createWorkflow(
      h.app,
      hostile.tenantId,
      "long-text",
      oneRule('payload.s.startsWith("ab") && size(payload.s) > 3'),
    );
    // 300 characters is past what the event loop handles; 4 is not.
    const long = await waitForCase(
      h.app,
      hostile.headers,
      await created(hostile, "long-text", { s: `ab${"c".repeat(298)}` }),
    );
    const short = await waitForCase(
      h.app,
      hostile.headers,
      await created(hostile, "long-text", { s: "abcd" }),
    );
    const neither = await waitForCase(
      h.app,
      hostile.headers,
      await created(hostile, "long-text", { s: `x${"c".repeat(299)}` }),
    );
    expect(long.result.decision.value).toBe("approved");
    expect(long.result.workflow_result).toEqual({ seen: 300 });
    expect(short.result.decision.value).toBe("approved");
    expect(short.result.workflow_result).toEqual({ seen: 4 });
    expect(neither.result.decision.value).toBe("declined");
  });

  it("a score node's output that reads its own score gives it on a thread too", async () => {
    await createWorkflow(h.app, hostile.tenantId, "score", {
      inputSchema: { type: "object" },
      start: "risk",
      nodes: [
        {
          id: "risk",
          type: "score",
          rules: [{ when: "size(payload.s) > 200", points: 60 }],
          bands: [
            { minScore: 0, decision: "approved" },
            { minScore: 50, decision: "in_review" },
          ],
          output: { score: "nodes.risk.score", tail: "payload.s.substring(298)" },
        },
      ],
    });
    const res = await waitForCase(
      h.app,
      hostile.headers,
      await created(hostile, "score", { s: `${"n".repeat(298)}ok` }),
    );
    expect(res.status).toBe("in_review");
    expect(res.result.workflow_result).toEqual({ score: 60, tail: "ok" });
  });

  it("reads the tenant's lists from a thread: the answers are looked up and the node decides as on the event loop", async () => {
    const list = await h.app.inject({
      method: "PUT",
      url: `/admin/tenants/${hostile.tenantId}/lists/blocked`,
      headers: adminHeaders,
      payload: {},
    });
    expect(list.statusCode, list.body).toBe(200);
    const added = await h.app.inject({
      method: "POST",
      url: `/admin/tenants/${hostile.tenantId}/lists/blocked/values`,
      headers: adminHeaders,
      payload: { add: ["bad"] },
    });
    expect(added.statusCode, added.body).toBe(200);
    await createWorkflow(
      h.app,
      hostile.tenantId,
      "listed",
      oneRule('inList("blocked", payload.id) && size(payload.s) > 200'),
    );
    const note = "n".repeat(300);
    const blocked = await waitForCase(
      h.app,
      hostile.headers,
      await created(hostile, "listed", { id: "bad", s: note }),
    );
    const clean = await waitForCase(
      h.app,
      hostile.headers,
      await created(hostile, "listed", { id: "good", s: note }),
    );
    expect(blocked.result.decision.value).toBe("approved");
    expect(clean.result.decision.value).toBe("declined");
    const trace = (
      await h.app.inject({ url: `/admin/cases/${blocked.caseId}`, headers: adminHeaders })
    ).json();
    expect(trace.trace[0].lists).toEqual([{ list: "blocked", value: "bad", found: true }]);
  });

  it("records the customer attributes an expression read on a thread, as on the event loop", async () => {
    await createWorkflow(
      h.app,
      hostile.tenantId,
      "attributes",
      oneRule('has(customer.attributes.tier) && customer.attributes.tier == "gold" && size(payload.s) > 200'),
    );
    const set = await h.app.inject({
      method: "POST",
      url: "/customer-attributes",
      headers: hostile.headers,
      payload: { externalCustomerId: "cust-42", attributes: { tier: "gold", other: 1 } },
    });
    expect(set.statusCode, set.body).toBe(200);
    const res = await waitForCase(
      h.app,
      hostile.headers,
      await created(hostile, "attributes", { s: "n".repeat(300) }),
    );
    expect(res.result.decision.value).toBe("approved");
    const trace = (await h.app.inject({ url: `/admin/cases/${res.caseId}`, headers: adminHeaders })).json();
    expect(trace.trace[0].attributes).toEqual({ tier: "gold" });
  });

  it("a workflow whose nodes each go to a thread takes one evaluation job for up to nine of them, and decides as on the event loop", async () => {
    const evaluations = async () =>
      sample(await metricsRegistry.metrics(), "cds_job_run_seconds_count", {
        kind: "engine.evaluate",
        outcome: "done",
      }) ?? 0;
    /** `count` rules nodes, each with an expression of its own that 300 characters take to a thread. */
    const chain = (count: number): WorkflowDefinition => ({
      inputSchema: { type: "object" },
      start: "n1",
      nodes: [
        ...Array.from({ length: count }, (_, i) => ({
          id: `n${i + 1}`,
          type: "rules",
          rules: [
            {
              when: `payload.s.startsWith("${"ab".slice(0, 1 + (i % 2))}") && size(payload.s) > ${i}`,
              next: i + 1 < count ? `n${i + 2}` : "yes",
            },
          ],
          default: "no",
        })),
        { id: "yes", type: "decision", decision: "approved", output: { seen: "size(payload.s)" } },
        { id: "no", type: "decision", decision: "declined" },
      ],
    });
    const traceOf = async (caseId: string) =>
      (await h.app.inject({ url: `/admin/cases/${caseId}`, headers: adminHeaders }))
        .json()
        .trace.map(({ startedAt: _s, finishedAt: _f, ...entry }: Record<string, unknown>) => entry);
    for (const [count, jobs] of [
      [3, 1],
      // The first job takes its own expression and eight more (AHEAD_ROUNDS); the tenth is a second job's.
      [10, 2],
    ] as const) {
      await createWorkflow(h.app, hostile.tenantId, `chain-${count}`, chain(count));
      const before = await evaluations();
      const long = await waitForCase(
        h.app,
        hostile.headers,
        await created(hostile, `chain-${count}`, { s: `ab${"c".repeat(298)}` }),
      );
      expect(await evaluations(), `${count} nodes`).toBe(before + jobs);
      const short = await waitForCase(
        h.app,
        hostile.headers,
        await created(hostile, `chain-${count}`, { s: `ab${"c".repeat(count)}` }),
      );
      // Nothing of the short one went to a thread.
      expect(await evaluations()).toBe(before + jobs);
      expect(long.result.decision.value).toBe("approved");
      expect(long.result.workflow_result).toEqual({ seen: 300 });
      expect(short.result.workflow_result).toEqual({ seen: count + 2 });
      const trace = await traceOf(long.caseId);
      expect(trace).toHaveLength(count + 1);
      // The rules nodes' entries as the event loop wrote them; the decision's output is the text's length.
      expect(trace.slice(0, -1)).toEqual((await traceOf(short.caseId)).slice(0, -1));
    }
  });

  it("a comprehension over a 100,000-element list ends on the budget, on a thread, at once", async () => {
    await createWorkflow(
      h.app,
      hostile.tenantId,
      "big-list",
      oneRule("payload.l.all(x, payload.l.exists(y, y == x))"),
    );
    const res = await waitForCase(
      h.app,
      hostile.headers,
      await created(hostile, "big-list", { l: Array.from({ length: 100_000 }, (_, i) => i), s: "" }),
    );
    expect(res.status).toBe("failed");
    const events = await eventsOf(h.ctx, res.caseId);
    // Not the deadline: all() absorbs an element's error and goes on with the next, but not once
    // the budget is spent (each of the other 99,960 elements once threw the budget's error again).
    expect(JSON.stringify(events[0]?.payload)).toContain("exceeded the evaluation budget");
  });
});

describe("input-schema validation on a thread", () => {
  it("a payload whose patterns need more than the event loop allows is validated on a thread: 201, or 400 past the allowance", async () => {
    await createWorkflow(
      h.app,
      hostile.tenantId,
      "pattern",
      oneRule("true", { type: "object", properties: { s: { type: "string", pattern: "^[a-z]+$" } } }),
    );
    expect((await submit(hostile, "pattern", { s: "a".repeat(40_000) })).statusCode).toBe(201);
    const bad = await submit(hostile, "pattern", { s: `${"a".repeat(40_000)}1` });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().details).toEqual([{ path: "payload.s", message: "must match the pattern ^[a-z]+$" }]);
    const huge = await submit(hostile, "pattern", { s: "a".repeat(500_000) });
    expect(huge.statusCode).toBe(400);
    expect(huge.json().details[0].message).toContain("is too long for the input schema's patterns to check");
  });
});
