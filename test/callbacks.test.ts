import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WorkflowDefinition } from "../src/modules/workflows/workflow.types.js";
import { createTestApp, type TestApp } from "./support/app.js";
import { createPartner, type Partner } from "./support/fixtures.js";
import { securityTests } from "./support/security.js";
import { createWorkflow, eventsOf, kycSubject, waitForCase } from "./support/workflows.js";

let h: TestApp;
beforeAll(async () => {
  h = await createTestApp({ publicUrl: "https://cds.example.test" });
  await h.startWorker();
});
afterAll(async () => {
  await h.close();
});

function kycFlow(expiresInSeconds: number, withTimeoutPath = true): WorkflowDefinition {
  return {
    inputSchema: { type: "object", properties: { level: { type: "string" } } },
    start: "verify",
    nodes: [
      {
        id: "verify",
        type: "external_callback",
        webhookKey: "idv",
        payload: { firstName: "subject.person.firstName", level: "payload.level" },
        expiresInSeconds,
        next: "check",
        ...(withTimeoutPath ? { onTimeout: "timedOut" } : {}),
      },
      {
        id: "check",
        type: "rules",
        rules: [{ when: "nodes.verify.result == 'clear'", next: "approve" }],
        default: "decline",
      },
      { id: "approve", type: "decision", decision: "approved", output: { verified: "nodes.verify.result" } },
      { id: "decline", type: "decision", decision: "declined", output: { verified: "nodes.verify.result" } },
      ...(withTimeoutPath
        ? [
            {
              id: "timedOut",
              type: "decision",
              decision: "in_review",
              output: { reason: "'no verification result'" },
            } as const,
          ]
        : []),
    ],
  };
}

interface Paused {
  partner: Partner;
  caseId: string;
  callbackUrl: string;
  dispatch: Record<string, unknown>;
}

async function pausedCase(
  expiresInSeconds = 3600,
  withTimeoutPath = true,
  partner?: Partner,
): Promise<Paused> {
  const owner = partner ?? (await createPartner(h.app));
  await createWorkflow(h.app, owner.tenantId, "kyc", kycFlow(expiresInSeconds, withTimeoutPath));
  const res = await h.app.inject({
    method: "POST",
    url: "/cases",
    headers: owner.headers,
    payload: { workflowId: "kyc", type: "KYC", payload: { level: "basic" }, subject: kycSubject },
  });
  const caseId = res.json().caseId;
  await waitForCase(h.app, owner.headers, caseId, (c) => c.status === "waiting");
  const dispatch = (await eventsOf(h.ctx, caseId)).find((e) => e.event_type === "external_callback.dispatch");
  if (!dispatch) throw new Error("no dispatch event");
  return {
    partner: owner,
    caseId,
    callbackUrl: dispatch.payload.callbackUrl as string,
    dispatch: dispatch.payload,
  };
}

function callbackPath(url: string): string {
  return new URL(url).pathname;
}

function deliver(p: Paused, body: unknown, headers: Record<string, string> = p.partner.headers) {
  return h.app.inject({ method: "POST", url: callbackPath(p.callbackUrl), headers, payload: body as never });
}

describe("external_callback nodes", () => {
  it("pause the case and emit external_callback.dispatch with the spec's camelCase fields", async () => {
    const p = await pausedCase();
    expect(p.dispatch).toEqual({
      event_type: "external_callback.dispatch",
      tenantId: p.partner.tenantId,
      caseId: p.caseId,
      nodeId: "verify",
      webhookKey: "idv",
      callbackUrl: expect.stringMatching(
        new RegExp(`^https://cds\\.example\\.test/cases/${p.caseId}/callbacks/[A-Za-z0-9]{32}$`),
      ),
      expiresAt: expect.any(String),
      payload: { firstName: "Ada", level: "basic" },
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
    });
    const expiresIn = new Date(p.dispatch.expiresAt as string).getTime() - Date.now();
    expect(expiresIn).toBeGreaterThan(3500_000);
    expect(expiresIn).toBeLessThanOrEqual(3600_000);
  });

  it("are listed by GET /cases/{caseId}/pending while paused, and no longer once resolved", async () => {
    const p = await pausedCase();
    const pending = await h.app.inject({
      method: "GET",
      url: `/cases/${p.caseId}/pending`,
      headers: p.partner.headers,
    });
    expect(pending.statusCode).toBe(200);
    expect(pending.json()).toEqual({
      pending: [
        {
          nodeId: "verify",
          providerId: null,
          pendingHandle: expect.stringMatching(/^[0-9a-f-]{36}$/),
          expiresAt: p.dispatch.expiresAt,
          availableActions: [],
        },
      ],
    });
    expect((await deliver(p, { result: "clear" })).statusCode).toBe(202);
    const after = await h.app.inject({
      method: "GET",
      url: `/cases/${p.caseId}/pending`,
      headers: p.partner.headers,
    });
    expect(after.json()).toEqual({ pending: [] });
  });

  it("continue with the callback body as the node's output for the rules after it", async () => {
    const clear = await pausedCase();
    const accepted = await deliver(clear, { result: "clear", score: 3 });
    expect(accepted.statusCode).toBe(202);
    expect(accepted.json()).toEqual({ caseId: clear.caseId, nodeId: "verify", status: "accepted" });
    const approved = await waitForCase(
      h.app,
      clear.partner.headers,
      clear.caseId,
      (c) => c.status === "decided",
    );
    expect(approved.result.decision.value).toBe("approved");
    expect(approved.result.workflow_result).toEqual({ verified: "clear" });

    const hit = await pausedCase();
    await deliver(hit, { result: "match" });
    const declined = await waitForCase(h.app, hit.partner.headers, hit.caseId, (c) => c.status === "decided");
    expect(declined.result.decision.value).toBe("declined");
  });

  it("answer 409 to a second delivery of the same callback", async () => {
    const p = await pausedCase();
    expect((await deliver(p, { result: "clear" })).statusCode).toBe(202);
    const again = await deliver(p, { result: "match" });
    expect(again.statusCode).toBe(409);
    const record = await waitForCase(h.app, p.partner.headers, p.caseId, (c) => c.status === "decided");
    expect(record.result.workflow_result).toEqual({ verified: "clear" });
  });

  it("answer 404 for an unknown callback ref or case, and 400 when the body is not a JSON object", async () => {
    const p = await pausedCase();
    const unknownRef = await h.app.inject({
      method: "POST",
      url: `/cases/${p.caseId}/callbacks/nope`,
      headers: p.partner.headers,
      payload: { result: "clear" },
    });
    expect(unknownRef.statusCode).toBe(404);
    const ref = callbackPath(p.callbackUrl).split("/").at(-1);
    const wrongCase = await h.app.inject({
      method: "POST",
      url: `/cases/7a1c3c52-0000-4000-8000-000000000000/callbacks/${ref}`,
      headers: p.partner.headers,
      payload: { result: "clear" },
    });
    expect(wrongCase.statusCode).toBe(404);
    for (const body of [[1, 2], "text", 42]) {
      const res = await deliver(p, body, { ...p.partner.headers, "content-type": "application/json" });
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
    }
    const malformed = await h.app.inject({
      method: "POST",
      url: callbackPath(p.callbackUrl),
      headers: { ...p.partner.headers, "content-type": "application/json" },
      payload: "{not json",
    });
    expect(malformed.statusCode).toBe(400);
    expect((await deliver(p, { result: "clear" })).statusCode).toBe(202);
  });

  it("take onTimeout when the callback does not come in time, after which a late callback is 410", async () => {
    const p = await pausedCase(1);
    const record = await waitForCase(h.app, p.partner.headers, p.caseId, (c) => c.status === "in_review");
    expect(record.result.workflow_result).toEqual({ reason: "no verification result" });
    const late = await deliver(p, { result: "clear" });
    expect(late.statusCode).toBe(410);
  });

  it("fail the case at the timeout when the node has no onTimeout", async () => {
    const p = await pausedCase(1, false);
    const record = await waitForCase(h.app, p.partner.headers, p.caseId, (c) => c.status === "failed");
    expect(record.error.message).toMatch(/no callback before/);
  });

  it("let exactly one of a callback and its timeout win when they race", async () => {
    const partner = await createPartner(h.app);
    const cases = await Promise.all(Array.from({ length: 8 }, () => pausedCase(2, true, partner)));
    // Deliver each callback around its expiry: some land before it, some after.
    await Promise.all(
      cases.map(async (p, i) => {
        const expiresAt = new Date(p.dispatch.expiresAt as string).getTime();
        await new Promise((r) => setTimeout(r, Math.max(0, expiresAt - Date.now() - 60 + i * 15)));
        const res = await deliver(p, { result: "clear" });
        const record = await waitForCase(
          h.app,
          partner.headers,
          p.caseId,
          (c) => c.status !== "waiting" && c.status !== "running",
        );
        const steps = await h.ctx.db.root
          .selectFrom("case_steps")
          .select(["node_id", "output"])
          .where("case_id", "=", p.caseId)
          .orderBy("seq")
          .execute();
        if (res.statusCode === 202) {
          expect(record.result.decision.value).toBe("approved");
          expect(steps.map((s) => s.node_id)).toEqual(["verify", "check", "approve"]);
        } else {
          expect(res.statusCode).toBe(410);
          expect(record.result.decision.value).toBe("in_review");
          expect(steps.map((s) => s.node_id)).toEqual(["verify", "timedOut"]);
          expect(steps[0]?.output).toMatchObject({ timedOut: true });
        }
        expect(record.result.decisionHistory).toHaveLength(1);
        const decisions = (await eventsOf(h.ctx, p.caseId)).filter(
          (e) => e.event_type !== "external_callback.dispatch",
        );
        expect(decisions).toHaveLength(1);
      }),
    );
  });
});

describe("GET /cases/{caseId}/pending", () => {
  securityTests(() => h, {
    scope: "cases:read",
    async request(_harness, owner) {
      const p = await pausedCase(3600, true, owner);
      return { method: "GET", url: `/cases/${p.caseId}/pending` };
    },
  });
});

describe("POST /cases/{caseId}/callbacks/{callbackRef}", () => {
  securityTests(() => h, {
    scope: "cases:callback",
    async request(_harness, owner) {
      const p = await pausedCase(3600, true, owner);
      return { method: "POST", url: callbackPath(p.callbackUrl), payload: { result: "clear" } };
    },
  });
});
