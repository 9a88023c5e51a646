import { readFileSync } from "node:fs";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WorkflowDefinition } from "../src/modules/workflows/workflow.types.js";
import { createTestApp, type TestApp } from "./support/app.js";
import { PROJECT_ROOT } from "./support/children/process.js";
import { adminHeaders, createPartner, type Partner } from "./support/fixtures.js";
import {
  amountScreen,
  createWorkflow,
  eventsOf,
  kycSubject,
  transactionSubject,
  waitForCase,
} from "./support/workflows.js";

let h: TestApp;
beforeAll(async () => {
  h = await createTestApp();
  await h.startWorker();
});
afterAll(async () => {
  await h.close();
});

async function submitAndSettle(
  partner: Partner,
  workflowId: string,
  payload: Record<string, unknown>,
  subject: Record<string, unknown> = kycSubject,
) {
  const res = await h.app.inject({
    method: "POST",
    url: "/cases",
    headers: partner.headers,
    payload: {
      workflowId,
      type: subject.transaction ? "Transaction" : subject.business ? "KYB" : "KYC",
      payload,
      subject,
      ...(subject.transaction ? { eventTimestamp: new Date().toISOString() } : {}),
    },
  });
  expect(res.statusCode, res.body).toBe(201);
  return waitForCase(h.app, partner.headers, res.json().caseId);
}

async function stepsOf(caseId: string) {
  return h.ctx.db.root
    .selectFrom("case_steps")
    .select(["seq", "node_id", "status", "output", "next_node_id"])
    .where("case_id", "=", caseId)
    .orderBy("seq")
    .execute();
}

describe("rules and decision nodes", () => {
  it("decides approved, records each step, and emits case.decided with the spec's fields", async () => {
    const partner = await createPartner(h.app);
    await createWorkflow(h.app, partner.tenantId, "screen", amountScreen);
    const record = await submitAndSettle(partner, "screen", { amount: 10 });
    expect(record.status).toBe("decided");
    const decision = record.result.decision;
    expect(decision).toEqual({
      value: "approved",
      source: "workflow",
      actor: "node:approve",
      decidedAt: expect.any(String),
    });
    expect(record.result.decisionHistory).toEqual([decision]);
    expect(record.result.workflow_result).toEqual({ reason: "low amount" });

    const steps = await stepsOf(record.caseId);
    expect(steps.map((s) => [s.seq, s.node_id, s.status, s.next_node_id])).toEqual([
      [1, "screen", "completed", "approve"],
      [2, "approve", "completed", null],
    ]);

    const events = await eventsOf(h.ctx, record.caseId);
    expect(events.map((e) => e.event_type)).toEqual(["case.decided"]);
    expect(events[0]?.payload).toEqual({
      event_type: "case.decided",
      case_id: record.caseId,
      external_customer_id: "cust-42",
      tenant_id: partner.tenantId,
      result: { decision, decisionHistory: [decision], workflow_result: { reason: "low amount" } },
      timestamp: expect.any(String),
    });
  });

  it("puts a case in review with case.pending_review, and leaves out external_customer_id when there is none", async () => {
    const partner = await createPartner(h.app);
    await createWorkflow(h.app, partner.tenantId, "screen", amountScreen);
    const subject = { business: { legalName: "Acme Ltd", country: "DE" } };
    const record = await submitAndSettle(partner, "screen", { amount: 5000 }, subject);
    expect(record.status).toBe("in_review");
    expect(record.result.decision.value).toBe("in_review");
    const [event] = await eventsOf(h.ctx, record.caseId);
    expect(event?.event_type).toBe("case.pending_review");
    expect(Object.keys(event?.payload ?? {}).sort()).toEqual([
      "case_id",
      "event_type",
      "result",
      "tenant_id",
      "timestamp",
    ]);
  });

  it("decides by the first matching case of a decision node, or its default", async () => {
    const partner = await createPartner(h.app);
    const wf: WorkflowDefinition = {
      inputSchema: { type: "object" },
      start: "decide",
      nodes: [
        {
          id: "decide",
          type: "decision",
          cases: [
            { when: "subject.transaction.amount >= 10000", decision: "declined" },
            { when: "subject.transaction.currency == 'EUR'", decision: "approved" },
          ],
          default: "in_review",
          output: { amount: "subject.transaction.amount", currency: "subject.transaction.currency" },
        },
      ],
    };
    await createWorkflow(h.app, partner.tenantId, "tx", wf);
    const eur = await submitAndSettle(partner, "tx", {}, transactionSubject);
    expect(eur.result.decision.value).toBe("approved");
    expect(eur.result.workflow_result).toEqual({ amount: 250.5, currency: "EUR" });
    const big = await submitAndSettle(
      partner,
      "tx",
      {},
      {
        transaction: { ...transactionSubject.transaction, amount: 20000 },
      },
    );
    expect(big.result.decision.value).toBe("declined");
    const usd = await submitAndSettle(
      partner,
      "tx",
      {},
      {
        transaction: { ...transactionSubject.transaction, currency: "USD" },
      },
    );
    expect(usd.result.decision.value).toBe("in_review");
  });
});

describe("the README tour's example workflow", () => {
  it("sends transactions of 10,000 or more to review and approves the others", async () => {
    const partner = await createPartner(h.app);
    const definition = JSON.parse(
      readFileSync(path.join(PROJECT_ROOT, "docs/examples/tx-screen.json"), "utf8"),
    );
    await createWorkflow(h.app, partner.tenantId, "tx-screen", definition);
    const tx = (amount: number) => ({ transaction: { ...transactionSubject.transaction, amount } });
    const large = await submitAndSettle(partner, "tx-screen", { amount: 25000, channel: "app" }, tx(25000));
    expect(large.status).toBe("in_review");
    expect(large.result.workflow_result).toEqual({ reason: "large amount" });
    const small = await submitAndSettle(partner, "tx-screen", { amount: 50 }, tx(50));
    expect(small.status).toBe("decided");
    expect(small.result.decision.value).toBe("approved");
  });
});

describe("score nodes", () => {
  const scoring: WorkflowDefinition = {
    inputSchema: {
      type: "object",
      properties: { amount: { type: "number" }, newDevice: { type: "boolean" } },
    },
    start: "risk",
    nodes: [
      {
        id: "risk",
        type: "score",
        rules: [
          { when: "payload.amount > 1000", points: 40 },
          { when: "payload.newDevice", points: 30 },
          { when: "has(customer.attributes.vip) && customer.attributes.vip == true", points: -50 },
        ],
        bands: [
          { minScore: -1000, decision: "approved" },
          { minScore: 50, decision: "in_review" },
          { minScore: 70, decision: "declined" },
        ],
        output: { score: "nodes.risk.score" },
      },
    ],
  };

  it("sums the points of every true rule and decides by the highest band not above the score", async () => {
    const partner = await createPartner(h.app);
    await createWorkflow(h.app, partner.tenantId, "risk", scoring);
    const low = await submitAndSettle(partner, "risk", { amount: 10, newDevice: false });
    expect(low.result.decision).toMatchObject({ value: "approved", source: "risk_evaluation" });
    expect(low.result.workflow_result).toEqual({ score: 0 });
    const mid = await submitAndSettle(partner, "risk", { amount: 5000, newDevice: false });
    expect(mid.result.decision.value).toBe("approved");
    expect(mid.result.workflow_result).toEqual({ score: 40 });
    const high = await submitAndSettle(partner, "risk", { amount: 5000, newDevice: true });
    expect(high.result.decision.value).toBe("declined");
    expect(high.result.workflow_result).toEqual({ score: 70 });
  });

  it("reads customer attributes set through the API", async () => {
    const partner = await createPartner(h.app);
    await createWorkflow(h.app, partner.tenantId, "risk", scoring);
    const set = await h.app.inject({
      method: "POST",
      url: "/customer-attributes",
      headers: partner.headers,
      payload: { externalCustomerId: "cust-42", attributes: { vip: true } },
    });
    expect(set.statusCode).toBe(200);
    const record = await submitAndSettle(partner, "risk", { amount: 5000, newDevice: true });
    expect(record.result.workflow_result).toEqual({ score: 20 });
    expect(record.result.decision.value).toBe("approved");
  });
});

describe("notify nodes", () => {
  it("emits node.notification with camelCase keys and the configured fields only, then goes on", async () => {
    const partner = await createPartner(h.app);
    const wf: WorkflowDefinition = {
      inputSchema: { type: "object" },
      start: "tell",
      nodes: [
        {
          id: "tell",
          type: "notify",
          payloadType: "idv-application-start",
          tag: "onboarding",
          webhookKey: "ops",
          output: { applicant: "subject.person.firstName", amount: "payload.amount * 2" },
          next: "quiet",
        },
        { id: "quiet", type: "notify", output: { step: "'two'" }, next: "done" },
        { id: "done", type: "decision", decision: "approved", output: { told: "nodes.tell.applicant" } },
      ],
    };
    await createWorkflow(h.app, partner.tenantId, "notify", wf);
    const record = await submitAndSettle(partner, "notify", { amount: 21 });
    expect(record.result.workflow_result).toEqual({ told: "Ada" });
    const events = await eventsOf(h.ctx, record.caseId);
    const notifications = events.filter((e) => e.event_type === "node.notification");
    expect(notifications).toHaveLength(2);
    const full = notifications.find((e) => e.payload.nodeId === "tell");
    expect(full?.webhook_key).toBe("ops");
    expect(full?.payload).toEqual({
      event_type: "node.notification",
      payloadType: "idv-application-start",
      tag: "onboarding",
      tenantId: partner.tenantId,
      caseId: record.caseId,
      nodeId: "tell",
      webhookKey: "ops",
      output: { applicant: "Ada", amount: 42 },
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
    });
    const plain = notifications.find((e) => e.payload.nodeId === "quiet");
    expect(plain?.payload).not.toHaveProperty("payloadType");
    expect(plain?.payload).not.toHaveProperty("tag");
    expect(plain?.payload.webhookKey).toBeNull();
  });
});

describe("failures", () => {
  it("fails the case and records the error when an expression fails at run time", async () => {
    const partner = await createPartner(h.app);
    const wf: WorkflowDefinition = {
      inputSchema: { type: "object" },
      start: "check",
      nodes: [
        {
          id: "check",
          type: "rules",
          rules: [{ when: "payload.missing.deep > 3", next: "yes" }],
          default: "yes",
        },
        { id: "yes", type: "decision", decision: "approved" },
      ],
    };
    await createWorkflow(h.app, partner.tenantId, "broken", wf);
    const record = await submitAndSettle(partner, "broken", {});
    expect(record.status).toBe("failed");
    expect(record.error).toMatchObject({ nodeId: "check", message: expect.stringMatching(/check/) });
    expect(record.result.decision).toBeNull();
    expect((await eventsOf(h.ctx, record.caseId)).map((e) => e.event_type)).toEqual(["case.failed"]);
    const [step] = await stepsOf(record.caseId);
    expect(step?.status).toBe("failed");
  });

  it("fails the case, without raising anything, when an information request's texts are invalid", async () => {
    const partner = await createPartner(h.app);
    const wf: WorkflowDefinition = {
      inputSchema: { type: "object" },
      start: "ask",
      nodes: [
        {
          id: "ask",
          type: "information_request",
          to: "'not an address'",
          subject: "'Documents needed'",
          body: "'Please upload your passport'",
          next: "ok",
        },
        { id: "ok", type: "decision", decision: "approved" },
      ],
    };
    await createWorkflow(h.app, partner.tenantId, "ask", wf);
    const record = await submitAndSettle(partner, "ask", {});
    expect(record.status).toBe("failed");
    expect(record.error.message).toMatch(/ask/);
    expect(record.error.message).not.toMatch(/not an address/);
    expect(record.informationRequests).toEqual([]);
    const events = await eventsOf(h.ctx, record.caseId);
    expect(events.map((e) => e.event_type)).toEqual(["case.failed"]);
    expect(JSON.stringify(events)).not.toMatch(/not an address/);
  });

  it("raises a request without waiting and goes on when the node does not await a response", async () => {
    const partner = await createPartner(h.app);
    const wf: WorkflowDefinition = {
      inputSchema: { type: "object" },
      start: "ask",
      nodes: [
        {
          id: "ask",
          type: "information_request",
          to: "'ada@example.com'",
          subject: "'Hello ' + subject.person.firstName",
          body: "'Please upload your passport'",
          next: "ok",
        },
        { id: "ok", type: "decision", decision: "approved", output: { rfi: "nodes.ask.status" } },
      ],
    };
    await createWorkflow(h.app, partner.tenantId, "ask", wf);
    const record = await submitAndSettle(partner, "ask", {});
    expect(record.status).toBe("decided");
    expect(record.result.workflow_result).toEqual({ rfi: "pending" });
    expect(record.informationRequests).toHaveLength(1);
    const types = (await eventsOf(h.ctx, record.caseId)).map((e) => e.event_type).sort();
    expect(types).toEqual(["case.decided", "case.rfi_requested"]);
  });

  it("fails a case whose provider node finds its broker no longer configured, with a clear recorded error", async () => {
    const partner = await createPartner(h.app);
    const configure = await h.app.inject({
      method: "PUT",
      url: `/admin/tenants/${partner.tenantId}/providers/opensanctions`,
      headers: adminHeaders,
      payload: { baseUrl: "https://api.opensanctions.example", credentials: { apiKey: "k" } },
    });
    expect(configure.statusCode).toBe(200);
    const wf: WorkflowDefinition = {
      inputSchema: { type: "object" },
      start: "screen",
      nodes: [
        { id: "screen", type: "provider", provider: "opensanctions", next: "ok" },
        { id: "ok", type: "decision", decision: "approved" },
      ],
    };
    await createWorkflow(h.app, partner.tenantId, "screen-gone", wf);
    await h.app.inject({
      method: "DELETE",
      url: `/admin/tenants/${partner.tenantId}/providers/opensanctions`,
      headers: adminHeaders,
    });
    const record = await submitAndSettle(partner, "screen-gone", {});
    expect(record.status).toBe("failed");
    expect(record.error.message).toMatch(/provider opensanctions failed: the tenant has no configuration/);
  });
});

describe("dry runs", () => {
  it("runs a case on an unpublished version the same way and marks it dryRun", async () => {
    const partner = await createPartner(h.app);
    const version = await createWorkflow(h.app, partner.tenantId, "screen", amountScreen, { publish: false });
    const res = await h.app.inject({
      method: "POST",
      url: `/admin/tenants/${partner.tenantId}/workflows/screen/versions/${version}/dry-run`,
      headers: adminHeaders,
      payload: { type: "KYC", payload: { amount: 3 }, subject: kycSubject, idempotencyKey: "ignored" },
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ dryRun: true, workflowVersion: version });
    const record = await waitForCase(h.app, partner.headers, res.json().caseId);
    expect(record).toMatchObject({ dryRun: true, status: "decided" });
    expect(record.result.decision.value).toBe("approved");
    // Recorded in the outbox, never delivered: the partner did not submit this case.
    expect((await eventsOf(h.ctx, record.caseId)).map((e) => e.event_type)).toEqual(["case.decided"]);
    const deliveries = await h.ctx.db.root
      .selectFrom("webhook_deliveries")
      .select("id")
      .where("case_id", "=", record.caseId)
      .execute();
    expect(deliveries).toEqual([]);
  });

  it("delivers the events of a submitted case (the counterpart of the dry run)", async () => {
    const partner = await createPartner(h.app);
    await createWorkflow(h.app, partner.tenantId, "screen", amountScreen);
    const record = await submitAndSettle(partner, "screen", { amount: 3 });
    const deliveries = await h.ctx.db.root
      .selectFrom("webhook_deliveries")
      .select("event_type")
      .where("case_id", "=", record.caseId)
      .execute();
    expect(deliveries).toEqual([{ event_type: "case.decided" }]);
  });

  it("answers 404 for an unknown version and 400 for an invalid submission", async () => {
    const partner = await createPartner(h.app);
    await createWorkflow(h.app, partner.tenantId, "screen", amountScreen);
    const unknown = await h.app.inject({
      method: "POST",
      url: `/admin/tenants/${partner.tenantId}/workflows/screen/versions/9/dry-run`,
      headers: adminHeaders,
      payload: { type: "KYC", payload: { amount: 3 }, subject: kycSubject },
    });
    expect(unknown.statusCode).toBe(404);
    const invalid = await h.app.inject({
      method: "POST",
      url: `/admin/tenants/${partner.tenantId}/workflows/screen/versions/1/dry-run`,
      headers: adminHeaders,
      payload: { type: "KYC", payload: {}, subject: kycSubject },
    });
    expect(invalid.statusCode).toBe(400);
  });
});

describe("analyst decisions", () => {
  async function decidedCase() {
    const partner = await createPartner(h.app);
    await createWorkflow(h.app, partner.tenantId, "screen", amountScreen);
    return { partner, record: await submitAndSettle(partner, "screen", { amount: 5000 }) };
  }

  it("appends an override to the history, keeps workflow_result, and emits case.decision_overridden", async () => {
    const { partner, record } = await decidedCase();
    const res = await h.app.inject({
      method: "POST",
      url: `/admin/cases/${record.caseId}/decision`,
      headers: adminHeaders,
      payload: { value: "declined", actor: "jane", reason: "document mismatch" },
    });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.status).toBe("decided");
    expect(body.result.decision).toEqual({
      value: "declined",
      source: "analyst",
      actor: "analyst:jane",
      decidedAt: expect.any(String),
      reason: "document mismatch",
    });
    expect(body.result.decisionHistory).toEqual([record.result.decision, body.result.decision]);
    expect(body.result.workflow_result).toEqual(record.result.workflow_result);

    const again = await h.app.inject({
      method: "POST",
      url: `/admin/cases/${record.caseId}/decision`,
      headers: adminHeaders,
      payload: { value: "in_review", actor: "joe" },
    });
    expect(again.json().status).toBe("in_review");
    expect(again.json().result.decisionHistory).toHaveLength(3);

    const events = await eventsOf(h.ctx, record.caseId);
    expect(events.map((e) => e.event_type)).toEqual([
      "case.pending_review",
      "case.decision_overridden",
      "case.decision_overridden",
    ]);
    expect(events[1]?.payload).toMatchObject({
      event_type: "case.decision_overridden",
      case_id: record.caseId,
      tenant_id: partner.tenantId,
      result: { decision: body.result.decision, decisionHistory: body.result.decisionHistory },
    });
    const read = await h.app.inject({
      method: "GET",
      url: `/cases/${record.caseId}`,
      headers: partner.headers,
    });
    expect(read.json().result.decisionHistory).toHaveLength(3);
  });

  it("closes a case, after which it cannot be overridden or closed again", async () => {
    const { record } = await decidedCase();
    const closed = await h.app.inject({
      method: "POST",
      url: `/admin/cases/${record.caseId}/close`,
      headers: adminHeaders,
      payload: { actor: "jane" },
    });
    expect(closed.statusCode).toBe(200);
    expect(closed.json().status).toBe("closed");
    for (const [url, payload] of [
      [`/admin/cases/${record.caseId}/decision`, { value: "approved", actor: "jane" }],
      [`/admin/cases/${record.caseId}/close`, { actor: "jane" }],
    ] as const) {
      const res = await h.app.inject({ method: "POST", url, headers: adminHeaders, payload });
      expect(res.statusCode).toBe(409);
    }
  });

  it("answers 409 to an override before the workflow decided, 404 for an unknown case, 401 without the token", async () => {
    const partner = await createPartner(h.app);
    const wf: WorkflowDefinition = {
      inputSchema: { type: "object" },
      start: "wait",
      nodes: [
        { id: "wait", type: "external_callback", payload: {}, expiresInSeconds: 3600, next: "done" },
        { id: "done", type: "decision", decision: "approved" },
      ],
    };
    await createWorkflow(h.app, partner.tenantId, "cb", wf);
    const created = await h.app.inject({
      method: "POST",
      url: "/cases",
      headers: partner.headers,
      payload: { workflowId: "cb", type: "KYC", payload: {}, subject: kycSubject },
    });
    const caseId = created.json().caseId;
    await waitForCase(h.app, partner.headers, caseId, (c) => c.status === "waiting");
    const early = await h.app.inject({
      method: "POST",
      url: `/admin/cases/${caseId}/decision`,
      headers: adminHeaders,
      payload: { value: "approved", actor: "jane" },
    });
    expect(early.statusCode).toBe(409);
    const unknown = await h.app.inject({
      method: "POST",
      url: "/admin/cases/7a1c3c52-0000-4000-8000-000000000000/decision",
      headers: adminHeaders,
      payload: { value: "approved", actor: "jane" },
    });
    expect(unknown.statusCode).toBe(404);
    const anonymous = await h.app.inject({
      method: "POST",
      url: `/admin/cases/${caseId}/close`,
      payload: { actor: "jane" },
    });
    expect(anonymous.statusCode).toBe(401);
  });
});

// The per-case tables keep no foreign keys (decision 0032): the write paths are what keep every
// row's parent. Run last in this file, after the cases of every test above.
describe("the per-case tables", () => {
  it("hold no row whose tenant, case or event does not exist", async () => {
    const { rows } = await sql<{ orphans: string; steps: string }>`
      SELECT (SELECT count(*) FROM cases x WHERE NOT EXISTS (SELECT 1 FROM tenants t WHERE t.id = x.tenant_id))
           + (SELECT count(*) FROM case_steps x WHERE NOT EXISTS (SELECT 1 FROM cases c WHERE c.id = x.case_id))
           + (SELECT count(*) FROM events x WHERE NOT EXISTS (SELECT 1 FROM tenants t WHERE t.id = x.tenant_id))
           + (SELECT count(*) FROM webhook_deliveries x WHERE NOT EXISTS (SELECT 1 FROM tenants t WHERE t.id = x.tenant_id))
           + (SELECT count(*) FROM webhook_deliveries x WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.id = x.event_id))
             AS orphans,
             (SELECT count(*) FROM case_steps) AS steps`.execute(h.ctx.db.root);
    expect(Number(rows[0]?.steps)).toBeGreaterThan(20);
    expect(Number(rows[0]?.orphans)).toBe(0);
  });
});
