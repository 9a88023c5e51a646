import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatCreatedAt, payloadDigest } from "../src/modules/providers/brokers/sumsub/sumsub.wire.js";
import type { WorkflowDefinition } from "../src/modules/workflows/workflow.types.js";
import { createTestApp, type TestApp } from "./support/app.js";
import { adminHeaders, createPartner, type Partner } from "./support/fixtures.js";
import { waitFor } from "./support/jobs.js";
import { sample } from "./support/metrics.js";
import { type ProviderRig, SUMSUB_WEBHOOK_SECRET, startProviderRig } from "./support/providers.js";
import { securityTests } from "./support/security.js";
import { createWorkflow, eventsOf, waitForCase } from "./support/workflows.js";

let h: TestApp;
let appUrl: string;
let rig: ProviderRig;
beforeAll(async () => {
  h = await createTestApp();
  appUrl = await h.app.listen({ port: 0, host: "127.0.0.1" });
  await h.startWorker();
  rig = await startProviderRig(appUrl);
});
afterAll(async () => {
  await rig.close();
  await h.close();
});

function kyc(
  options: { allowRetries?: boolean; expiresInSeconds?: number; onTimeout?: string } = {},
): WorkflowDefinition {
  return {
    inputSchema: { type: "object" },
    start: "idv",
    nodes: [
      {
        id: "idv",
        type: "provider",
        provider: "sumsub",
        config: { levelName: "basic-kyc-level", ...(options.allowRetries ? { allowRetries: true } : {}) },
        ...(options.expiresInSeconds ? { expiresInSeconds: options.expiresInSeconds } : {}),
        ...(options.onTimeout ? { onTimeout: options.onTimeout } : {}),
        next: "verdict",
      },
      {
        id: "verdict",
        type: "rules",
        rules: [{ when: 'nodes.idv.review_answer == "GREEN"', next: "approve" }],
        default: "decline",
      },
      { id: "approve", type: "decision", decision: "approved", output: { idv: "nodes.idv.review_answer" } },
      {
        id: "decline",
        type: "decision",
        decision: "declined",
        output: { labels: "nodes.idv.reject_labels" },
      },
      ...(options.onTimeout
        ? [{ id: options.onTimeout, type: "decision" as const, decision: "in_review" as const }]
        : []),
    ],
  } as WorkflowDefinition;
}

let seq = 0;
function person(externalCustomerId: string | null) {
  return {
    displayName: "Ada Lovelace",
    person: {
      firstName: "Ada",
      lastName: "Lovelace",
      dateOfBirth: "1990-12-10",
      nationality: "GB",
      ...(externalCustomerId
        ? { identifiers: [{ type: "external_customer_id", value: externalCustomerId }] }
        : {}),
    },
  };
}

interface Started {
  partner: Partner;
  caseId: string;
  handle: string;
  applicantId: string;
  /** The idv-application-start notification's output. */
  start: Record<string, unknown>;
}

async function partnerWithProviders(): Promise<Partner> {
  const partner = await createPartner(h.app);
  await rig.configure(h.app, partner.tenantId);
  return partner;
}

async function submit(partner: Partner, workflowId: string, subject: unknown, type = "KYC"): Promise<string> {
  const res = await h.app.inject({
    method: "POST",
    url: "/cases",
    headers: partner.headers,
    payload: { workflowId, type, payload: {}, subject },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().caseId;
}

async function notifications(caseId: string) {
  return (
    (await eventsOf(h.ctx, caseId))
      .filter((e) => e.event_type === "node.notification")
      // biome-ignore lint/suspicious/noExplicitAny: tests read event payloads as loose JSON
      .map((e) => e.payload as Record<string, any>)
  );
}

/** A KYC case paused on the sumsub node, with its start notification. */
async function startKyc(
  options: Parameters<typeof kyc>[0] & { partner?: Partner; externalCustomerId?: string | null } = {},
): Promise<Started> {
  const partner = options.partner ?? (await partnerWithProviders());
  const workflowId = `kyc-${++seq}`;
  await createWorkflow(h.app, partner.tenantId, workflowId, kyc(options));
  const ecid =
    options.externalCustomerId === undefined ? `cust-${seq}-${Date.now()}` : options.externalCustomerId;
  const caseId = await submit(partner, workflowId, person(ecid));
  await waitForCase(h.app, partner.headers, caseId, (c) => c.status === "waiting");
  const [note] = await notifications(caseId);
  if (!note) throw new Error("no idv-application-start notification");
  return {
    partner,
    caseId,
    handle: note.output.pending_handle,
    applicantId: note.output.applicant_id,
    start: note.output,
  };
}

async function review(applicantId: string, body: Record<string, unknown>) {
  const res = await fetch(`${rig.sumsubUrl}/_simulator/applicants/${applicantId}/review`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
  const sent = (await res.json()) as { status: number; body: string; digest: string };
  expect(sent.status).toBe(200);
  return sent;
}

function action(partner: Partner, handle: string, actionId: string, params?: unknown) {
  return h.app.inject({
    method: "POST",
    url: `/pending/${handle}/actions/${actionId}`,
    headers: partner.headers,
    ...(params === undefined ? {} : { payload: { params } as object }),
  });
}

async function fault(body: Record<string, unknown>) {
  await fetch(`${rig.sumsubUrl}/_simulator/faults`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

async function callsOf(caseId: string) {
  return h.ctx.db.root
    .selectFrom("provider_calls")
    .selectAll()
    .where("case_id", "=", caseId)
    .orderBy("id")
    .execute();
}

describe("a sumsub node", () => {
  it("runs a KYC case from the idv-application-start notification to case.decided", async () => {
    const s = await startKyc();
    expect(s.start).toEqual({
      applicant_id: expect.any(String),
      external_user_id: expect.stringMatching(/^cust-/),
      verification_url: expect.stringMatching(new RegExp(`^${rig.sumsubUrl}/websdk/p/`)),
      sdk_token: expect.stringMatching(/^_act-sbx-/),
      sdk_token_expires_at: expect.any(String),
      pending_handle: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    const [note] = await notifications(s.caseId);
    expect(note).toMatchObject({ payloadType: "idv-application-start", nodeId: "idv", caseId: s.caseId });
    const applicant = rig.sumsub.applicants.get(s.applicantId);
    expect(applicant?.fixedInfo).toMatchObject({
      firstName: "Ada",
      lastName: "Lovelace",
      nationality: "GBR",
    });

    const pending = await h.app.inject({
      method: "GET",
      url: `/cases/${s.caseId}/pending`,
      headers: s.partner.headers,
    });
    expect(pending.json()).toEqual({
      pending: [
        {
          nodeId: "idv",
          providerId: "sumsub",
          pendingHandle: s.handle,
          expiresAt: expect.any(String),
          availableActions: [
            "refresh_sdk_token",
            "regenerate_link",
            "prefill_applicant_info",
            "prefill_company_info",
            "reset_level_step",
            "reset_applicant",
          ].map((id) => ({ id, label: expect.any(String), resolvesAwait: false })),
        },
      ],
    });
    // The default pause is a day.
    const expiresIn = Date.parse(pending.json().pending[0].expiresAt) - Date.now();
    expect(expiresIn).toBeGreaterThan(86_000_000);

    await review(s.applicantId, { reviewAnswer: "GREEN" });
    const record = await waitForCase(h.app, s.partner.headers, s.caseId, (c) => c.status === "decided");
    expect(record.result.decision.value).toBe("approved");
    expect(record.result.workflow_result).toEqual({ idv: "GREEN" });
    const types = (await eventsOf(h.ctx, s.caseId)).map((e) => e.event_type);
    expect(types).toEqual(["node.notification", "case.decided"]);
    const after = await h.app.inject({
      method: "GET",
      url: `/cases/${s.caseId}/pending`,
      headers: s.partner.headers,
    });
    expect(after.json()).toEqual({ pending: [] });

    // The trace: the provider step with its broker and vendor calls, never tokens.
    const steps = await h.ctx.db.root
      .selectFrom("case_steps")
      .selectAll()
      .where("case_id", "=", s.caseId)
      .orderBy("seq")
      .execute();
    const idv = steps.find((st) => st.node_id === "idv");
    expect(idv).toMatchObject({
      status: "completed",
      next_node_id: "verdict",
      output: { review_answer: "GREEN", reject_type: null, reject_labels: null, applicant_id: s.applicantId },
    });
    expect(idv?.explain).toMatchObject({
      brokerId: "sumsub",
      calls: [
        { action: "create_applicant", httpStatus: 200, outcome: "ok", actor: "node:idv" },
        { action: "sdk_token", httpStatus: 200 },
        { action: "websdk_link", httpStatus: 200 },
      ],
    });
    const stored = JSON.stringify(steps) + JSON.stringify(await callsOf(s.caseId));
    expect(stored).not.toContain(s.start.sdk_token as string);
    expect(stored).not.toContain(s.start.verification_url as string);
    expect(stored).not.toContain("Lovelace");
  });

  it("keeps waiting on RED RETRY with idv-retry-requested, then goes on at GREEN", async () => {
    const s = await startKyc({ allowRetries: true });
    await review(s.applicantId, {
      reviewAnswer: "RED",
      reviewRejectType: "RETRY",
      rejectLabels: ["BAD_SELFIE"],
    });
    await waitFor(async () => (await notifications(s.caseId)).length === 2);
    const retry = (await notifications(s.caseId))[1];
    expect(retry).toMatchObject({
      payloadType: "idv-retry-requested",
      output: {
        applicant_id: s.applicantId,
        reject_type: "RETRY",
        reject_labels: ["BAD_SELFIE"],
        pending_handle: s.handle,
      },
    });
    const still = await waitForCase(h.app, s.partner.headers, s.caseId);
    expect(still.status).toBe("waiting");
    await review(s.applicantId, { reviewAnswer: "GREEN" });
    const record = await waitForCase(h.app, s.partner.headers, s.caseId, (c) => c.status === "decided");
    expect(record.result.decision.value).toBe("approved");
  });

  it("ends on RED FINAL with the reject labels, and RED RETRY is final without allowRetries", async () => {
    for (const reviewRejectType of ["FINAL", "RETRY"]) {
      const s = await startKyc();
      await review(s.applicantId, { reviewAnswer: "RED", reviewRejectType, rejectLabels: ["FORGERY"] });
      const record = await waitForCase(h.app, s.partner.headers, s.caseId, (c) => c.status === "decided");
      expect(record.result.decision.value).toBe("declined");
      expect(record.result.workflow_result).toEqual({ labels: ["FORGERY"] });
    }
  });

  it("ignores an event older than the last one applied (vendors do not promise order)", async () => {
    const s = await startKyc({ allowRetries: true });
    const now = Date.now();
    await review(s.applicantId, {
      reviewAnswer: "RED",
      reviewRejectType: "RETRY",
      createdAt: formatCreatedAt(new Date(now)),
    });
    await waitFor(async () => (await notifications(s.caseId)).length === 2);
    await review(s.applicantId, {
      reviewAnswer: "GREEN",
      createdAt: formatCreatedAt(new Date(now - 60_000)),
    });
    await waitFor(async () => {
      const e = await h.ctx.db.root
        .selectFrom("provider_events")
        .select("handled_at")
        .where("subject_ref", "=", s.applicantId)
        .execute();
      return e.length === 2 && e.every((x) => x.handled_at !== null);
    });
    expect((await waitForCase(h.app, s.partner.headers, s.caseId)).status).toBe("waiting");
  });

  it("resolves every open wait of the applicant in the tenant", async () => {
    const partner = await partnerWithProviders();
    const a = await startKyc({ partner, externalCustomerId: "cust-shared" });
    const b = await startKyc({ partner, externalCustomerId: "cust-shared" });
    expect(b.applicantId).toBe(a.applicantId);
    await review(a.applicantId, { reviewAnswer: "GREEN" });
    for (const s of [a, b]) {
      expect(
        (await waitForCase(h.app, partner.headers, s.caseId, (c) => c.status === "decided")).status,
      ).toBe("decided");
    }
  });

  it("asks the vendor shortly before the pause ends when its webhook was lost, and goes on with the review", async () => {
    const s = await startKyc({ expiresInSeconds: 4, onTimeout: "late" });
    const applicant = rig.sumsub.applicants.get(s.applicantId);
    if (!applicant) throw new Error("no applicant at the vendor");
    // Reviewed at the vendor, whose webhook never arrives.
    applicant.review = { reviewStatus: "completed", reviewResult: { reviewAnswer: "GREEN" } };
    const record = await waitForCase(h.app, s.partner.headers, s.caseId, (c) => c.status === "decided");
    expect(record.result.decision.value).toBe("approved");
    const polled = (await callsOf(s.caseId)).filter((c) => c.action === "get_applicant");
    expect(polled.map((c) => [c.actor, c.http_status])).toEqual([["system", 200]]);
  });

  it("resumes once on a replayed vendor webhook", async () => {
    const s = await startKyc();
    const sent = await review(s.applicantId, { reviewAnswer: "GREEN" });
    await waitForCase(h.app, s.partner.headers, s.caseId, (c) => c.status === "decided");
    const url = rig.sumsub.webhooks.at(-1);
    expect(url?.body).toBe(sent.body);
    const replay = await rig.sumsub.sendWebhook(sent.body);
    expect(replay.status).toBe(200);
    const events = await h.ctx.db.root
      .selectFrom("provider_events")
      .selectAll()
      .where("subject_ref", "=", s.applicantId)
      .execute();
    expect(events).toHaveLength(1);
    const steps = await h.ctx.db.root
      .selectFrom("case_steps")
      .select("node_id")
      .where("case_id", "=", s.caseId)
      .execute();
    expect(steps.map((st) => st.node_id)).toEqual(["idv", "verdict", "approve"]);
    const decided = (await eventsOf(h.ctx, s.caseId)).filter((e) => e.event_type === "case.decided");
    expect(decided).toHaveLength(1);
  });

  it("answers 401 to a bad digest and records nothing; 404 to an unknown URL", async () => {
    const s = await startKyc();
    const inbound = rig.sumsub.webhooks.length;
    const body = JSON.stringify({
      type: "applicantReviewed",
      applicantId: s.applicantId,
      reviewResult: { reviewAnswer: "GREEN" },
      createdAtMs: formatCreatedAt(new Date()),
    });
    const path = new URL((await rig.configure(h.app, s.partner.tenantId)).inboundWebhookUrl).pathname;
    const post = (digest: string, to = path) =>
      h.app.inject({
        method: "POST",
        url: to,
        headers: {
          "content-type": "application/json",
          "x-payload-digest": digest,
          "x-payload-digest-alg": "HMAC_SHA256_HEX",
        },
        payload: body,
      });
    expect((await post(payloadDigest("wrong-secret", body))).statusCode).toBe(401);
    expect((await post("")).statusCode).toBe(401);
    expect(
      (await post(payloadDigest(SUMSUB_WEBHOOK_SECRET, body), "/providers/sumsub/webhooks/unknown-token"))
        .statusCode,
    ).toBe(404);
    const stored = await h.ctx.db.root
      .selectFrom("provider_events")
      .selectAll()
      .where("tenant_id", "=", s.partner.tenantId)
      .execute();
    expect(stored).toEqual([]);
    expect(rig.sumsub.webhooks.length).toBe(inbound);
    expect((await waitForCase(h.app, s.partner.headers, s.caseId)).status).toBe("waiting");
    // The right digest over the same bytes is accepted.
    expect((await post(payloadDigest(SUMSUB_WEBHOOK_SECRET, body))).json()).toEqual({
      received: true,
      duplicate: false,
    });
    await waitForCase(h.app, s.partner.headers, s.caseId, (c) => c.status === "decided");
  });
});

describe("pending actions (endpoint 5)", () => {
  it("runs each of the six actions, records each vendor call with its actor, and the node stays paused", async () => {
    const s = await startKyc();
    const refreshed = await action(s.partner, s.handle, "refresh_sdk_token");
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    expect(refreshed.json().output).toEqual({
      sdk_token: expect.stringMatching(/^_act-sbx-/),
      sdk_token_expires_at: expect.any(String),
    });
    expect(refreshed.json().output.sdk_token).not.toBe(s.start.sdk_token);
    const link = await action(s.partner, s.handle, "regenerate_link", {});
    expect(link.json().output).toEqual({ verification_url: expect.stringMatching(/\/websdk\/p\//) });
    const prefill = await action(s.partner, s.handle, "prefill_applicant_info", {
      firstName: "Augusta",
      email: "ada@example.com",
    });
    expect(prefill.json()).toEqual({ output: { applicant_id: s.applicantId } });
    expect(rig.sumsub.applicants.get(s.applicantId)?.fixedInfo.firstName).toBe("Augusta");
    const company = await action(s.partner, s.handle, "prefill_company_info", {
      legalName: "Analytical Engines Ltd",
      country: "GB",
    });
    expect(company.json()).toEqual({ output: { applicant_id: s.applicantId } });
    expect(rig.sumsub.applicants.get(s.applicantId)?.fixedInfo.companyInfo).toMatchObject({
      companyName: "Analytical Engines Ltd",
      country: "GBR",
    });
    const step = await action(s.partner, s.handle, "reset_level_step", { step: "IDENTITY" });
    expect(step.json()).toEqual({ output: { ok: true } });
    const reset = await action(s.partner, s.handle, "reset_applicant");
    expect(reset.json()).toEqual({ output: { ok: true } });
    expect(rig.sumsub.applicants.get(s.applicantId)?.resets).toEqual(["IDENTITY", "*"]);

    const calls = (await callsOf(s.caseId)).filter((c) => c.actor.startsWith("apikey:"));
    expect(calls.map((c) => [c.action, c.http_status, c.actor])).toEqual(
      ["sdk_token", "websdk_link", "prefill", "prefill", "reset_level_step", "reset_applicant"].map((a) => [
        a,
        200,
        `apikey:${s.partner.keyId}`,
      ]),
    );
    expect(calls.every((c) => c.duration_ms >= 0)).toBe(true);
    expect((await waitForCase(h.app, s.partner.headers, s.caseId)).status).toBe("waiting");

    // Once decided, the trace lists the action calls too.
    await review(s.applicantId, { reviewAnswer: "GREEN" });
    await waitForCase(h.app, s.partner.headers, s.caseId, (c) => c.status === "decided");
    const idv = await h.ctx.db.root
      .selectFrom("case_steps")
      .select("explain")
      .where("case_id", "=", s.caseId)
      .where("node_id", "=", "idv")
      .executeTakeFirstOrThrow();
    expect(
      (idv.explain as { calls: Array<{ actor: string }> }).calls.filter((c) => c.actor.startsWith("apikey:")),
    ).toHaveLength(6);
    // The case's trace shows them apart from the node's own calls: action, actor, status, duration.
    const record = await h.app.inject({
      method: "GET",
      url: `/admin/cases/${s.caseId}`,
      headers: adminHeaders,
    });
    const traced = (record.json().trace as Array<Record<string, unknown>>).find((e) => e.nodeId === "idv");
    const own = traced?.calls as Array<{ actor: string }>;
    expect(own.length).toBeGreaterThan(0);
    expect(own.every((c) => c.actor === "node:idv")).toBe(true);
    const byActions = traced?.actionCalls as Array<Record<string, unknown>>;
    expect(byActions.map((c) => [c.action, c.actor, c.httpStatus])).toEqual(
      ["sdk_token", "websdk_link", "prefill", "prefill", "reset_level_step", "reset_applicant"].map((a) => [
        a,
        `apikey:${s.partner.keyId}`,
        200,
      ]),
    );
    expect(byActions.every((c) => typeof c.durationMs === "number" && typeof c.at === "string")).toBe(true);
    expect(traced?.verdicts).toEqual([]);
  });

  it("answers 400 for bad params, 404 for an unknown handle or an action not offered", async () => {
    const s = await startKyc();
    const bad = await action(s.partner, s.handle, "reset_level_step", { step: "lower case" });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().details[0].path).toBe("params.step");
    expect((await action(s.partner, s.handle, "reset_level_step", {})).statusCode).toBe(400);
    expect(
      (await action(s.partner, "00000000-0000-4000-8000-000000000000", "reset_applicant")).statusCode,
    ).toBe(404);
    expect((await action(s.partner, "not-a-handle", "reset_applicant")).statusCode).toBe(404);
    const unknown = await action(s.partner, s.handle, "approve_everyone");
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error).toMatch(/not offered/);
  });

  it("answers 409 once the node is no longer paused", async () => {
    const s = await startKyc();
    await review(s.applicantId, { reviewAnswer: "GREEN" });
    await waitForCase(h.app, s.partner.headers, s.caseId, (c) => c.status === "decided");
    const res = await action(s.partner, s.handle, "refresh_sdk_token");
    expect(res.statusCode).toBe(409);
  });

  it("answers 410 past the handle's expiresAt, and the node went on at onTimeout", async () => {
    const s = await startKyc({ expiresInSeconds: 1, onTimeout: "late" });
    const record = await waitForCase(h.app, s.partner.headers, s.caseId, (c) => c.status === "in_review");
    expect(record.result.decision.value).toBe("in_review");
    const res = await action(s.partner, s.handle, "refresh_sdk_token");
    expect(res.statusCode).toBe(410);
    // A review arriving after the timeout changes nothing.
    await review(s.applicantId, { reviewAnswer: "GREEN" });
    await waitFor(async () => {
      const e = await h.ctx.db.root
        .selectFrom("provider_events")
        .select("outcome")
        .where("subject_ref", "=", s.applicantId)
        .executeTakeFirst();
      return e?.outcome != null;
    });
    expect((await waitForCase(h.app, s.partner.headers, s.caseId)).status).toBe("in_review");
  });

  it("answers 502 when the vendor keeps failing, after three attempts", async () => {
    const s = await startKyc();
    const failedCalls = async () =>
      sample((await h.app.inject({ url: "/metrics" })).body, "cds_provider_call_seconds_count", {
        broker: "sumsub",
        outcome: "failed",
      }) ?? 0;
    const failedBefore = await failedCalls();
    await fault({ action: "sdk_token", status: 500, times: 3 });
    const res = await action(s.partner, s.handle, "refresh_sdk_token");
    expect(res.statusCode).toBe(502);
    expect(res.json().error).toMatch(/provider sumsub failed/);
    const failed = (await callsOf(s.caseId)).filter((c) => c.actor.startsWith("apikey:"));
    expect(failed.map((c) => [c.attempt, c.http_status, c.outcome])).toEqual([
      [1, 500, "failed"],
      [2, 500, "failed"],
      [3, 500, "failed"],
    ]);
    expect(await failedCalls()).toBe(failedBefore + 3);
    expect((await waitForCase(h.app, s.partner.headers, s.caseId)).status).toBe("waiting");
  });

  describe("security", () => {
    securityTests(() => h, {
      scope: "cases:callback",
      async request(_h, owner) {
        await rig.configure(h.app, owner.tenantId);
        const s = await startKyc({ partner: owner });
        return { method: "POST", url: `/pending/${s.handle}/actions/reset_applicant` };
      },
    });
  });
});

describe("durable actions (endpoints 6 and 7)", () => {
  it("lists and runs regenerate_share_token after the decision: two calls, two tokens", async () => {
    const s = await startKyc();
    await review(s.applicantId, { reviewAnswer: "GREEN" });
    await waitForCase(h.app, s.partner.headers, s.caseId, (c) => c.status === "decided");
    const list = await h.app.inject({
      method: "GET",
      url: `/cases/${s.caseId}/actions`,
      headers: s.partner.headers,
    });
    expect(list.json()).toEqual({
      actions: [{ brokerId: "sumsub", id: "regenerate_share_token", label: expect.any(String) }],
    });
    const call = () =>
      h.app.inject({
        method: "POST",
        url: `/cases/${s.caseId}/actions/sumsub/regenerate_share_token`,
        headers: s.partner.headers,
        payload: { params: { forClientId: "partner-bank", ttlInSeconds: 600 } },
      });
    const first = await call();
    const second = await call();
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json().output).toEqual({
      share_token: expect.stringMatching(/^_sht-/),
      expires_at: expect.any(String),
    });
    expect(second.json().output.share_token).not.toBe(first.json().output.share_token);
    expect(rig.sumsub.shareTokens.filter((t) => t.applicantId === s.applicantId)).toHaveLength(2);
    const calls = (await callsOf(s.caseId)).filter((c) => c.action === "share_token");
    expect(calls.map((c) => c.actor)).toEqual([`apikey:${s.partner.keyId}`, `apikey:${s.partner.keyId}`]);
  });

  it("answers 409 when the case has no external customer id", async () => {
    const s = await startKyc({ externalCustomerId: null });
    expect(s.start.external_user_id).toBe(s.caseId);
    const res = await h.app.inject({
      method: "POST",
      url: `/cases/${s.caseId}/actions/sumsub/regenerate_share_token`,
      headers: s.partner.headers,
      payload: { params: { forClientId: "partner-bank" } },
    });
    expect(res.statusCode).toBe(409);
    expect(res.json().error).toMatch(/external customer id/);
  });

  it("answers 404 for a broker that did not run on the case or an unknown action, 400 for bad params", async () => {
    const s = await startKyc();
    const post = (path: string, payload: unknown = {}) =>
      h.app.inject({
        method: "POST",
        url: `/cases/${s.caseId}/actions/${path}`,
        headers: s.partner.headers,
        payload: payload as object,
      });
    expect((await post("opensanctions/rescreen")).statusCode).toBe(404);
    expect((await post("sumsub/mint_money")).statusCode).toBe(404);
    expect((await post("sumsub/regenerate_share_token", { params: {} })).statusCode).toBe(400);
    const unknownCase = await h.app.inject({
      method: "GET",
      url: "/cases/00000000-0000-4000-8000-000000000000/actions",
      headers: s.partner.headers,
    });
    expect(unknownCase.statusCode).toBe(404);
  });

  describe("security of endpoint 6", () => {
    securityTests(() => h, {
      scope: "cases:read",
      async request(_h, owner) {
        await rig.configure(h.app, owner.tenantId);
        const s = await startKyc({ partner: owner });
        return { method: "GET", url: `/cases/${s.caseId}/actions` };
      },
    });
  });

  describe("security of endpoint 7", () => {
    securityTests(() => h, {
      scope: "cases:callback",
      async request(_h, owner) {
        await rig.configure(h.app, owner.tenantId);
        const s = await startKyc({ partner: owner });
        return {
          method: "POST",
          url: `/cases/${s.caseId}/actions/sumsub/regenerate_share_token`,
          payload: { params: { forClientId: "x" } },
        };
      },
    });
  });
});

describe("opensanctions and the workflow around providers", () => {
  const screening: WorkflowDefinition = {
    inputSchema: { type: "object" },
    start: "screen",
    nodes: [
      {
        id: "screen",
        type: "provider",
        provider: "opensanctions",
        config: { threshold: 0.8 },
        next: "route",
        onError: "manual",
      },
      {
        id: "route",
        type: "rules",
        rules: [{ when: "nodes.screen.matched", next: "decline" }],
        default: "approve",
      },
      { id: "approve", type: "decision", decision: "approved" },
      { id: "decline", type: "decision", decision: "declined", output: { top: "nodes.screen.top_score" } },
      { id: "manual", type: "decision", decision: "in_review", output: { why: "nodes.screen.error" } },
    ],
  } as WorkflowDefinition;

  it("routes a case by a rule on the screening result, and rescreen gives the same shape", async () => {
    const partner = await partnerWithProviders();
    const fixed = JSON.parse(JSON.stringify(screening).replace("nodes.screen.error", "nodes.screen.error"));
    await createWorkflow(h.app, partner.tenantId, "screen", fixed);
    const hit = await submit(partner, "screen", {
      displayName: "Boris",
      person: { firstName: "Boris", lastName: "Blacklistov", dateOfBirth: "1961-03-14" },
    });
    const clean = await submit(partner, "screen", {
      displayName: "Grace",
      person: { firstName: "Grace", lastName: "Hopper" },
    });
    const declined = await waitForCase(h.app, partner.headers, hit);
    expect(declined.result.decision.value).toBe("declined");
    expect(declined.result.workflow_result).toEqual({ top: 1 });
    expect((await waitForCase(h.app, partner.headers, clean)).result.decision.value).toBe("approved");
    const rescreen = await h.app.inject({
      method: "POST",
      url: `/cases/${hit}/actions/opensanctions/rescreen`,
      headers: partner.headers,
    });
    expect(rescreen.statusCode, rescreen.body).toBe(200);
    expect(rescreen.json().output).toMatchObject({
      matched: true,
      top_score: 1,
      results: [{ id: "sim-person-0001" }],
    });
  });

  it("goes to onError with {error} when the vendor cannot be reached, and fails the case without onError", async () => {
    const partner = await createPartner(h.app);
    const dead = `http://127.0.0.1:1`;
    await h.app.inject({
      method: "PUT",
      url: `/admin/tenants/${partner.tenantId}/providers/opensanctions`,
      headers: adminHeaders,
      payload: { baseUrl: dead, credentials: { apiKey: "k" } },
    });
    const fixed = JSON.parse(JSON.stringify(screening).replace("nodes.screen.error", "nodes.screen.error"));
    await createWorkflow(h.app, partner.tenantId, "screen", fixed);
    const withOnError = await submit(partner, "screen", {
      displayName: "Grace",
      person: { firstName: "Grace", lastName: "Hopper" },
    });
    const record = await waitForCase(h.app, partner.headers, withOnError, undefined, 20_000);
    expect(record.result.decision.value).toBe("in_review");
    expect(record.result.workflow_result.why).toMatch(/match: the vendor failed \(connection refused/);
    const attempts = await callsOf(withOnError);
    expect(attempts.map((c) => c.attempt)).toEqual([1, 2, 3]);

    const noOnError = JSON.parse(JSON.stringify(fixed));
    delete noOnError.nodes[0].onError;
    noOnError.nodes = noOnError.nodes.filter((n: { id: string }) => n.id !== "manual");
    await createWorkflow(h.app, partner.tenantId, "screen-strict", noOnError);
    const failing = await submit(partner, "screen-strict", {
      displayName: "Grace",
      person: { firstName: "Grace", lastName: "Hopper" },
    });
    const failed = await waitForCase(h.app, partner.headers, failing, undefined, 20_000);
    expect(failed.status).toBe("failed");
    const types = (await eventsOf(h.ctx, failing)).map((e) => e.event_type);
    expect(types).toEqual(["case.failed"]);
  });

  it("refuses to publish or dry-run a version whose broker the tenant has not configured", async () => {
    const partner = await createPartner(h.app);
    const version = await createWorkflow(h.app, partner.tenantId, "kyc-unconfigured", kyc(), {
      publish: false,
    });
    const publish = await h.app.inject({
      method: "POST",
      url: `/admin/tenants/${partner.tenantId}/workflows/kyc-unconfigured/versions/${version}/publish`,
      headers: adminHeaders,
    });
    expect(publish.statusCode).toBe(400);
    expect(publish.json().error).toMatch(/provider "sumsub" is not configured/);
    expect(publish.json().details).toEqual([{ path: "nodes[0]", message: expect.stringMatching(/sumsub/) }]);
    const dryRun = await h.app.inject({
      method: "POST",
      url: `/admin/tenants/${partner.tenantId}/workflows/kyc-unconfigured/versions/${version}/dry-run`,
      headers: adminHeaders,
      payload: { type: "KYC", payload: {}, subject: person("c-1") },
    });
    expect(dryRun.statusCode).toBe(400);
    await rig.configure(h.app, partner.tenantId);
    const again = await h.app.inject({
      method: "POST",
      url: `/admin/tenants/${partner.tenantId}/workflows/kyc-unconfigured/versions/${version}/publish`,
      headers: adminHeaders,
    });
    expect(again.statusCode).toBe(200);
  });

  it("refuses at creation an unknown provider or a config its broker does not accept", async () => {
    const partner = await createPartner(h.app);
    const res = await h.app.inject({
      method: "POST",
      url: `/admin/tenants/${partner.tenantId}/workflows/bad/versions`,
      headers: adminHeaders,
      payload: {
        inputSchema: { type: "object" },
        start: "a",
        nodes: [
          { id: "a", type: "provider", provider: "acme", next: "b" },
          { id: "b", type: "provider", provider: "sumsub", config: { level: 1 }, next: "c" },
          { id: "c", type: "decision", decision: "approved" },
        ],
      },
    });
    expect(res.statusCode).toBe(400);
    const paths = res.json().details.map((d: { path: string }) => d.path);
    expect(paths).toEqual(
      expect.arrayContaining(["nodes[0].provider", "nodes[1].config.levelName", "nodes[1].config.level"]),
    );
  });

  it("never calls a vendor while holding the case lock: an analyst closes the case during a slow call", async () => {
    const partner = await partnerWithProviders();
    await createWorkflow(h.app, partner.tenantId, "kyc-slow", kyc());
    await fault({ action: "create_applicant", delayMs: 3000, times: 1 });
    const caseId = await submit(partner, "kyc-slow", person(`cust-slow-${Date.now()}`));
    await waitFor(() => (rig.sumsub.stats.inFlight.create_applicant ?? 0) > 0);
    const close = await h.app.inject({
      method: "POST",
      url: `/admin/cases/${caseId}/close`,
      headers: adminHeaders,
      payload: { actor: "jane" },
    });
    expect(close.statusCode).toBe(200);
    // The close did not wait for the vendor: the lock was free.
    expect((rig.sumsub.stats.inFlight.create_applicant ?? 0) > 0).toBe(true);
    await waitFor(() => (rig.sumsub.stats.inFlight.create_applicant ?? 0) === 0);
    await new Promise((r) => setTimeout(r, 1500));
    const record = await waitForCase(h.app, partner.headers, caseId);
    expect(record.status).toBe("closed");
    expect(await notifications(caseId)).toEqual([]);
  });
});
