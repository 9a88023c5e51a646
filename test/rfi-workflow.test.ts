import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WorkflowDefinition } from "../src/modules/workflows/workflow.types.js";
import { createTestApp, type TestApp } from "./support/app.js";
import { adminHeaders, createPartner, type Partner } from "./support/fixtures.js";
import { answerRfi, eventsOf, uploadDocument } from "./support/rfi.js";
import { createWorkflow, kycSubject, waitForCase } from "./support/workflows.js";

let h: TestApp;
beforeAll(async () => {
  h = await createTestApp();
  await h.startWorker();
});
afterAll(async () => {
  await h.close();
});

const settled = (c: { status: string }) => ["decided", "in_review", "failed"].includes(c.status);

function askingWorkflow(expiresInSeconds: number): WorkflowDefinition {
  return {
    inputSchema: { type: "object", properties: { what: { type: "string" } } },
    start: "ask",
    nodes: [
      {
        id: "ask",
        type: "information_request",
        to: "'ada@example.com'",
        subject: "'Proof of income'",
        body: "'Please send ' + payload.what",
        awaitResponse: true,
        expiresInSeconds,
        next: "check",
        onExpired: "timed_out",
        onCancelled: "withdrawn",
      },
      {
        id: "check",
        type: "rules",
        rules: [{ when: "nodes.ask.fields.income > 1000", next: "approve" }],
        default: "review",
      },
      {
        id: "approve",
        type: "decision",
        decision: "approved",
        output: { income: "nodes.ask.fields.income", documents: "size(nodes.ask.documents)" },
      },
      { id: "review", type: "decision", decision: "in_review", output: { why: "'low income'" } },
      { id: "timed_out", type: "decision", decision: "declined", output: { why: "nodes.ask.status" } },
      { id: "withdrawn", type: "decision", decision: "in_review", output: { why: "nodes.ask.status" } },
    ],
  };
}

/** Submits a case to the workflow and waits until its node awaits the request it raised. */
async function waitingCase(partner: Partner, workflowId: string): Promise<{ caseId: string; rfiId: string }> {
  const res = await h.app.inject({
    method: "POST",
    url: "/cases",
    headers: partner.headers,
    payload: { workflowId, type: "KYC", payload: { what: "a payslip" }, subject: kycSubject },
  });
  expect(res.statusCode, res.body).toBe(201);
  const { caseId } = res.json();
  await waitForCase(h.app, partner.headers, caseId, (c) => c.status === "waiting");
  const list = await h.app.inject({ method: "GET", url: `/cases/${caseId}/rfi`, headers: partner.headers });
  const [request] = list.json().informationRequests;
  expect(request).toMatchObject({
    status: "pending",
    source: "workflow",
    requestedBy: "node:ask",
    body: "Please send a payslip",
    awaitsResponse: true,
  });
  return { caseId, rfiId: request.rfiId };
}

describe("an awaiting information_request node", () => {
  it("continues at next with the answer as its output, so rules match on field keys", async () => {
    const partner = await createPartner(h.app);
    await createWorkflow(h.app, partner.tenantId, "income", askingWorkflow(3600));
    const { caseId, rfiId } = await waitingCase(partner, "income");
    const doc = await uploadDocument(h.app, partner, caseId, rfiId);
    const answered = await answerRfi(h.app, partner, caseId, rfiId, {
      fields: [{ key: "income", value: 4200 }],
      documents: [{ uploadId: doc }],
    });
    expect(answered.statusCode).toBe(200);
    const decided = await waitForCase(h.app, partner.headers, caseId, settled);
    expect(decided.status, JSON.stringify(decided.error)).toBe("decided");
    expect(decided.result.decision.value).toBe("approved");
    expect(decided.result.workflow_result).toEqual({ income: 4200, documents: 1 });
    const types = (await eventsOf(h.ctx, caseId)).map((e) => e.event_type);
    expect(types).toEqual(["case.rfi_requested", "case.rfi_answered", "case.decided"]);
  });

  it("takes onExpired when the deadline passes unanswered", async () => {
    const partner = await createPartner(h.app);
    await createWorkflow(h.app, partner.tenantId, "income", askingWorkflow(1));
    const { caseId, rfiId } = await waitingCase(partner, "income");
    const decided = await waitForCase(h.app, partner.headers, caseId, settled);
    expect(decided.result.decision.value).toBe("declined");
    expect(decided.result.workflow_result).toEqual({ why: "expired" });
    const request = await h.app.inject({
      method: "GET",
      url: `/cases/${caseId}/rfi/${rfiId}`,
      headers: partner.headers,
    });
    expect(request.json().status).toBe("expired");
  });

  it("takes onCancelled when an analyst cancels the request", async () => {
    const partner = await createPartner(h.app);
    await createWorkflow(h.app, partner.tenantId, "income", askingWorkflow(3600));
    const { caseId, rfiId } = await waitingCase(partner, "income");
    const cancelled = await h.app.inject({
      method: "POST",
      url: `/admin/cases/${caseId}/rfi/${rfiId}/cancel`,
      headers: adminHeaders,
      payload: { actor: "jane" },
    });
    expect(cancelled.statusCode).toBe(200);
    const decided = await waitForCase(h.app, partner.headers, caseId, settled);
    expect(decided.result.decision.value).toBe("in_review");
    expect(decided.result.workflow_result).toEqual({ why: "cancelled" });
  });
});
