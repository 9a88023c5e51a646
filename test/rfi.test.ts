import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../src/main.js";
import { NodeRfiError, raiseRfiFromNode } from "../src/modules/rfi/rfi.node.js";
import { listCaseInformationRequests } from "../src/modules/rfi/rfi.service.js";
import { ADMIN_TOKEN, createTestApp, type TestApp } from "./support/app.js";
import { signedIn } from "./support/console.js";
import { adminHeaders, createPartner, createStoredCase, type Partner } from "./support/fixtures.js";
import { answerRfi, eventsOf, mintSlot, raiseRfi, setCase, uploadDocument, waitFor } from "./support/rfi.js";
import { securityTests } from "./support/security.js";

let h: TestApp;
beforeAll(async () => {
  h = await createTestApp();
  await h.startWorker();
});
afterAll(async () => {
  await h.close();
});

const TEXTS = {
  to: "ada@example.com",
  subject: "Proof of address",
  body: "Please send a recent utility bill.",
};
const ALWAYS = [
  "body",
  "case_id",
  "case_type",
  "event_type",
  "requested_by",
  "rfi_id",
  "source",
  "subject",
  "tenant_id",
  "timestamp",
  "to",
];

async function partnerWithCase(): Promise<{ partner: Partner; caseId: string }> {
  const partner = await createPartner(h.app);
  return { partner, caseId: await createStoredCase(h.ctx, partner.tenantId) };
}

function raise(partner: Partner, caseId: string, payload: Record<string, unknown>) {
  return h.app.inject({ method: "POST", url: `/cases/${caseId}/rfi`, headers: partner.headers, payload });
}

function getRfi(partner: Partner, caseId: string, rfiId: string) {
  return h.app.inject({ method: "GET", url: `/cases/${caseId}/rfi/${rfiId}`, headers: partner.headers });
}

function admin(method: "GET" | "POST", url: string, payload?: Record<string, unknown>) {
  return h.app.inject({ method, url, headers: adminHeaders, ...(payload ? { payload } : {}) });
}

async function configureWebhook(tenantId: string, key: string): Promise<void> {
  const put = await h.app.inject({
    method: "PUT",
    url: `/admin/tenants/${tenantId}/webhooks/${key}`,
    headers: adminHeaders,
    payload: {
      url: "http://127.0.0.1:9/hooks",
      secrets: [{ id: "s1", secret: "s".repeat(32) }],
      activeSecretId: "s1",
    },
  });
  expect(put.statusCode, put.body).toBe(200);
}

describe("POST /cases/{caseId}/rfi", () => {
  securityTests(() => h, {
    scope: "cases:write",
    async request(harness, owner) {
      const caseId = await createStoredCase(harness.ctx, owner.tenantId);
      return { method: "POST", url: `/cases/${caseId}/rfi`, payload: TEXTS };
    },
  });

  it("answers 201 with a pending request attributed to the key, and emits case.rfi_requested with exactly the spec's fields", async () => {
    const { partner, caseId } = await partnerWithCase();
    const res = await raise(partner, caseId, { ...TEXTS, tenantId: "00000000-0000-4000-8000-000000000000" });
    expect(res.statusCode).toBe(201);
    const view = res.json();
    expect(view).toMatchObject({
      caseId,
      status: "pending",
      source: "api",
      requestedBy: `apikey:${partner.keyId}`,
      ...TEXTS,
      cc: [],
      templateId: null,
      webhookKey: null,
      awaitsResponse: false,
      expiresAt: null,
      uploadSlotsMinted: 0,
      reminderCount: 0,
      answer: null,
    });
    const events = await eventsOf(h.ctx, caseId, "case.rfi_requested");
    expect(events).toHaveLength(1);
    const payload = events[0]?.payload as Record<string, unknown>;
    expect(Object.keys(payload).sort()).toEqual(ALWAYS);
    expect(payload).toMatchObject({
      event_type: "case.rfi_requested",
      tenant_id: partner.tenantId,
      case_id: caseId,
      rfi_id: view.rfiId,
      case_type: "KYC",
      ...TEXTS,
      requested_by: `apikey:${partner.keyId}`,
      source: "api",
    });
    expect(events[0]?.webhook_key).toBeNull();
  });

  it("carries template_id, cc, webhook_key and response_expires_at only when set, and schedules the expiry", async () => {
    const { partner, caseId } = await partnerWithCase();
    await configureWebhook(partner.tenantId, "compliance");
    const expiresAt = new Date(Date.now() + 3 * 86_400_000).toISOString();
    const res = await raise(partner, caseId, {
      ...TEXTS,
      cc: ["kyc@bank.example", "ops@bank.example"],
      templateId: "proof-of-address-v2",
      webhookKey: "compliance",
      expiresAt,
    });
    expect(res.statusCode).toBe(201);
    const { rfiId } = res.json();
    const [event] = await eventsOf(h.ctx, caseId, "case.rfi_requested");
    expect(Object.keys(event?.payload ?? {}).sort()).toEqual(
      [...ALWAYS, "cc", "template_id", "webhook_key", "response_expires_at"].sort(),
    );
    expect(event?.payload).toMatchObject({
      cc: ["kyc@bank.example", "ops@bank.example"],
      template_id: "proof-of-address-v2",
      webhook_key: "compliance",
      response_expires_at: expiresAt,
    });
    expect(event?.webhook_key).toBe("compliance");
    const job = await h.ctx.db.root
      .selectFrom("jobs")
      .select(["run_at", "job_key"])
      .where("job_key", "=", `rfi.expire:${rfiId}`)
      .executeTakeFirstOrThrow();
    expect(job.run_at.toISOString()).toBe(expiresAt);
  });

  it("answers 400 naming the field for a bad address, empty texts, a bad deadline or an unknown webhookKey", async () => {
    const { partner, caseId } = await partnerWithCase();
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ to: "not-an-address" }, /\bto must/],
      [{ to: undefined }, /\bto is required/],
      [{ cc: ["ok@example.com", "nope"] }, /cc\[1\]/],
      [{ subject: "" }, /subject must/],
      [{ body: "x".repeat(65_537) }, /body must/],
      [{ expiresAt: "tomorrow" }, /expiresAt must/],
      [{ expiresAt: "2020-01-01T00:00:00Z" }, /expiresAt must be in the future/],
      [{ expiresAt: new Date(Date.now() + 400 * 86_400_000).toISOString() }, /at most 365 days/],
      [{ webhookKey: "nowhere" }, /webhookKey names no webhook configuration/],
    ];
    for (const [change, message] of cases) {
      const res = await raise(partner, caseId, { ...TEXTS, ...change });
      expect(res.statusCode, JSON.stringify(change)).toBe(400);
      expect(res.json().error).toBe("invalid_request");
      expect(res.json().message).toMatch(message);
    }
    expect(await eventsOf(h.ctx, caseId)).toHaveLength(0);
  });

  it("answers 404 for an unknown case, 409 case_terminal for a failed or closed one and 409 dry_run for a dry run", async () => {
    const { partner, caseId } = await partnerWithCase();
    const unknown = await raise(partner, crypto.randomUUID(), TEXTS);
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual({ error: "not_found", message: "case not found" });
    for (const [change, code] of [
      [{ status: "failed" }, "case_terminal"],
      [{ status: "closed" }, "case_terminal"],
      [{ status: "decided", dryRun: true }, "dry_run"],
    ] as const) {
      await setCase(h.ctx, caseId, { status: "received", dryRun: false });
      await setCase(h.ctx, caseId, change);
      const res = await raise(partner, caseId, TEXTS);
      expect(res.statusCode).toBe(409);
      expect(res.json().error).toBe(code);
    }
  });
});

describe("GET /cases/{caseId}/rfi/{rfiId} and GET /cases/{caseId}/rfi", () => {
  securityTests(() => h, {
    scope: "cases:read",
    async request(harness, owner) {
      const caseId = await createStoredCase(harness.ctx, owner.tenantId);
      const { rfiId } = await raiseRfi(harness.app, owner, caseId);
      return { method: "GET", url: `/cases/${caseId}/rfi/${rfiId}` };
    },
  });

  securityTests(() => h, {
    scope: "cases:read",
    async request(harness, owner) {
      const caseId = await createStoredCase(harness.ctx, owner.tenantId);
      return { method: "GET", url: `/cases/${caseId}/rfi` };
    },
  });

  it("answers 404 for an unknown or malformed request and for a request of another case", async () => {
    const { partner, caseId } = await partnerWithCase();
    const { rfiId } = await raiseRfi(h.app, partner, caseId);
    const other = await createStoredCase(h.ctx, partner.tenantId);
    for (const [c, r] of [
      [caseId, crypto.randomUUID()],
      [caseId, "nope"],
      [other, rfiId],
    ]) {
      const res = await getRfi(partner, c as string, r as string);
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ error: "not_found", message: "information request not found" });
    }
  });

  it("lists a case's requests oldest first, each with its status, attribution, answer and documents", async () => {
    const { partner, caseId } = await partnerWithCase();
    const first = await raiseRfi(h.app, partner, caseId, { subject: "First" });
    const second = await admin("POST", `/admin/cases/${caseId}/rfi`, {
      ...TEXTS,
      subject: "Second",
      actor: "jane",
    });
    expect(second.statusCode).toBe(201);
    const doc = await uploadDocument(h.app, partner, caseId, first.rfiId);
    await answerRfi(h.app, partner, caseId, first.rfiId, {
      fields: [{ key: "employer", value: "Analytical Engines Ltd" }],
      documents: [{ uploadId: doc, label: "Payslip" }],
    });
    const res = await h.app.inject({ method: "GET", url: `/cases/${caseId}/rfi`, headers: partner.headers });
    expect(res.statusCode).toBe(200);
    const list = res.json().informationRequests;
    expect(list.map((r: { subject: string }) => r.subject)).toEqual(["First", "Second"]);
    expect(list[0]).toMatchObject({
      status: "answered",
      requestedBy: `apikey:${partner.keyId}`,
      uploadSlotsMinted: 1,
      answer: {
        answeredBy: `apikey:${partner.keyId}`,
        source: "rfi_response",
        fields: [{ key: "employer", value: "Analytical Engines Ltd", label: null }],
        documents: [{ uploadId: doc, label: "Payslip", contentType: "application/pdf" }],
      },
    });
    expect(list[1]).toMatchObject({
      status: "pending",
      requestedBy: "analyst:jane",
      source: "analyst",
      answer: null,
    });

    // The case view reads the same through listCaseInformationRequests.
    expect(
      JSON.parse(JSON.stringify(await listCaseInformationRequests(h.ctx.db.root, partner.tenantId, caseId))),
    ).toEqual(list);
    expect(await listCaseInformationRequests(h.ctx.db.root, crypto.randomUUID(), caseId)).toEqual([]);
    expect((await getRfi(partner, caseId, first.rfiId)).json()).toEqual(list[0]);
  });
});

describe("operator: raise, remind, cancel", () => {
  it("answers 401 without or with a wrong operator token on every RFI operator route", async () => {
    const { partner, caseId } = await partnerWithCase();
    const { rfiId } = await raiseRfi(h.app, partner, caseId);
    const routes: Array<["GET" | "POST", string]> = [
      ["POST", `/admin/cases/${caseId}/rfi`],
      ["GET", `/admin/cases/${caseId}/rfi`],
      ["POST", `/admin/cases/${caseId}/rfi/${rfiId}/remind`],
      ["POST", `/admin/cases/${caseId}/rfi/${rfiId}/cancel`],
      ["POST", `/admin/cases/${caseId}/rfi/${rfiId}/answer`],
      ["GET", `/admin/cases/${caseId}/documents/${crypto.randomUUID()}`],
    ];
    for (const [method, url] of routes) {
      for (const headers of [
        {},
        { authorization: "Bearer wrong-token-0123456789" },
        { authorization: ADMIN_TOKEN },
      ]) {
        const res = await h.app.inject({ method, url, headers });
        expect(res.statusCode, `${method} ${url}`).toBe(401);
      }
    }
    expect((await getRfi(partner, caseId, rfiId)).json()).toMatchObject({
      status: "pending",
      reminderCount: 0,
    });
  });

  it("raises as analyst:<actor> with source analyst", async () => {
    const { caseId } = await partnerWithCase();
    const res = await admin("POST", `/admin/cases/${caseId}/rfi`, { ...TEXTS, actor: "jane.doe" });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({
      requestedBy: "analyst:jane.doe",
      source: "analyst",
      status: "pending",
    });
    const [event] = await eventsOf(h.ctx, caseId, "case.rfi_requested");
    expect(event?.payload).toMatchObject({ requested_by: "analyst:jane.doe", source: "analyst" });
    const noActor = await admin("POST", `/admin/cases/${caseId}/rfi`, TEXTS);
    expect(noActor.statusCode).toBe(400);
    expect(noActor.json().message).toMatch(/actor/);
    expect(
      (await admin("POST", `/admin/cases/${crypto.randomUUID()}/rfi`, { ...TEXTS, actor: "a" })).statusCode,
    ).toBe(404);
  });

  it("reminds with a new outbox event for the same rfi_id, and refuses to remind a closed request", async () => {
    const { partner, caseId } = await partnerWithCase();
    const { rfiId } = await raiseRfi(h.app, partner, caseId);
    const res = await admin("POST", `/admin/cases/${caseId}/rfi/${rfiId}/remind`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ rfiId, status: "pending", reminderCount: 1 });
    expect(res.json().lastRemindedAt).not.toBeNull();
    const events = await eventsOf(h.ctx, caseId, "case.rfi_requested");
    expect(events).toHaveLength(2);
    expect(events[0]?.id).not.toBe(events[1]?.id);
    expect(events.map((e) => e.payload.rfi_id)).toEqual([rfiId, rfiId]);
    const { timestamp: _a, ...original } = events[0]?.payload ?? {};
    const { timestamp: _b, ...reminder } = events[1]?.payload ?? {};
    expect(reminder).toEqual(original);

    await admin("POST", `/admin/cases/${caseId}/rfi/${rfiId}/cancel`);
    const closed = await admin("POST", `/admin/cases/${caseId}/rfi/${rfiId}/remind`);
    expect(closed.statusCode).toBe(409);
    expect(closed.json().error).toBe("not_pending");
    const unknown = await admin("POST", `/admin/cases/${caseId}/rfi/${crypto.randomUUID()}/remind`);
    expect(unknown.statusCode).toBe(404);
  });

  it("cancels a pending request once, and refuses to cancel an answered one", async () => {
    const { partner, caseId } = await partnerWithCase();
    const { rfiId } = await raiseRfi(h.app, partner, caseId);
    const res = await admin("POST", `/admin/cases/${caseId}/rfi/${rfiId}/cancel`, { actor: "jane" });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ status: "cancelled", cancelledBy: "analyst:jane" });
    const again = await admin("POST", `/admin/cases/${caseId}/rfi/${rfiId}/cancel`);
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual(res.json());
    expect((await mintSlot(h.app, partner, caseId, rfiId)).json().error).toBe("not_pending");

    const answered = await raiseRfi(h.app, partner, caseId);
    await answerRfi(h.app, partner, caseId, answered.rfiId, { fields: [{ key: "a", value: 1 }] });
    const refused = await admin("POST", `/admin/cases/${caseId}/rfi/${answered.rfiId}/cancel`);
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toEqual({
      error: "not_pending",
      message: "the information request is answered, not pending",
    });
  });
});

describe("expiry", () => {
  it("marks a request expired at its deadline; it can then be neither answered nor given slots", async () => {
    const { partner, caseId } = await partnerWithCase();
    const expiresAt = new Date(Date.now() + 1200).toISOString();
    const { rfiId } = await raiseRfi(h.app, partner, caseId, { expiresAt });
    const expired = await waitFor(async () => {
      const view = (await getRfi(partner, caseId, rfiId)).json();
      return view.status === "expired" ? view : undefined;
    });
    expect(new Date(expired.expiredAt).getTime()).toBeGreaterThanOrEqual(new Date(expiresAt).getTime());
    const res = await answerRfi(h.app, partner, caseId, rfiId, { fields: [{ key: "a", value: 1 }] });
    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual({
      error: "not_pending",
      message: "the information request is expired, not pending",
    });
    expect((await mintSlot(h.app, partner, caseId, rfiId)).json().error).toBe("not_pending");
  });

  it("leaves a request answered before its deadline answered", async () => {
    const { partner, caseId } = await partnerWithCase();
    const expiresAt = new Date(Date.now() + 800).toISOString();
    const { rfiId } = await raiseRfi(h.app, partner, caseId, { expiresAt });
    expect(
      (await answerRfi(h.app, partner, caseId, rfiId, { fields: [{ key: "a", value: 1 }] })).statusCode,
    ).toBe(200);
    await waitFor(
      async () => {
        const job = await h.ctx.db.root
          .selectFrom("jobs")
          .select("id")
          .where("job_key", "=", `rfi.expire:${rfiId}`)
          .executeTakeFirst();
        return job ? undefined : true;
      },
      10_000,
      "the expiry job to run",
    );
    expect((await getRfi(partner, caseId, rfiId)).json()).toMatchObject({
      status: "answered",
      expiredAt: null,
    });
  });
});

describe("raised by a workflow node", () => {
  function nodeRequest(tenantId: string, caseId: string, extra: Record<string, unknown> = {}) {
    return {
      tenantId,
      caseId,
      caseType: "KYB",
      dryRun: false,
      nodeId: "ask_for_documents",
      ...TEXTS,
      cc: undefined,
      templateId: undefined,
      webhookKey: undefined,
      awaitResponse: false,
      expiresAt: null,
      ...extra,
    };
  }

  it("stores node:<nodeId> with source workflow, and marks an awaiting request in the event", async () => {
    const { partner, caseId } = await partnerWithCase();
    const expiresAt = new Date(Date.now() + 86_400_000);
    const { rfiId } = await h.ctx.db.transaction((tx) =>
      raiseRfiFromNode(
        h.ctx,
        tx,
        nodeRequest(partner.tenantId, caseId, { awaitResponse: true, expiresAt, cc: ["ops@bank.example"] }),
      ),
    );
    const view = (await getRfi(partner, caseId, rfiId)).json();
    expect(view).toMatchObject({
      requestedBy: "node:ask_for_documents",
      source: "workflow",
      awaitsResponse: true,
      expiresAt: expiresAt.toISOString(),
      cc: ["ops@bank.example"],
    });
    const [event] = await eventsOf(h.ctx, caseId, "case.rfi_requested");
    expect(Object.keys(event?.payload ?? {}).sort()).toEqual(
      [...ALWAYS, "awaits_response", "cc", "response_expires_at"].sort(),
    );
    expect(event?.payload).toMatchObject({
      requested_by: "node:ask_for_documents",
      source: "workflow",
      case_type: "KYB",
      awaits_response: true,
      response_expires_at: expiresAt.toISOString(),
    });
    const job = await h.ctx.db.root
      .selectFrom("jobs")
      .select("run_at")
      .where("job_key", "=", `rfi.expire:${rfiId}`)
      .executeTakeFirstOrThrow();
    expect(job.run_at.toISOString()).toBe(expiresAt.toISOString());
  });

  it("omits awaits_response and response_expires_at for a request nobody waits on", async () => {
    const { partner, caseId } = await partnerWithCase();
    await h.ctx.db.transaction((tx) => raiseRfiFromNode(h.ctx, tx, nodeRequest(partner.tenantId, caseId)));
    const [event] = await eventsOf(h.ctx, caseId, "case.rfi_requested");
    expect(Object.keys(event?.payload ?? {}).sort()).toEqual(ALWAYS);
  });

  it("refuses texts an API caller could not send, naming the field but never its value", async () => {
    const { partner, caseId } = await partnerWithCase();
    const error = await h.ctx.db
      .transaction((tx) =>
        raiseRfiFromNode(
          h.ctx,
          tx,
          nodeRequest(partner.tenantId, caseId, { to: "secret-customer-at-nowhere" }),
        ),
      )
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(NodeRfiError);
    expect((error as Error).message).toMatch(/ask_for_documents.*to must match format "email"/);
    expect((error as Error).message).not.toContain("secret-customer");
    expect(await eventsOf(h.ctx, caseId)).toHaveLength(0);
  });

  it("expires an awaiting request at its deadline", async () => {
    const { partner, caseId } = await partnerWithCase();
    const { rfiId } = await h.ctx.db.transaction((tx) =>
      raiseRfiFromNode(
        h.ctx,
        tx,
        nodeRequest(partner.tenantId, caseId, { awaitResponse: true, expiresAt: new Date(Date.now() + 500) }),
      ),
    );
    await waitFor(async () =>
      (await getRfi(partner, caseId, rfiId)).json().status === "expired" ? true : undefined,
    );
  });
});

describe("cds rfi", () => {
  function cli(args: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    const fetchThroughApp: typeof fetch = async (input, init) => {
      const url = new URL(String(input));
      const res = await h.app.inject({
        method: (init?.method ?? "GET") as "GET",
        url: `${url.pathname}${url.search}`,
        headers: init?.headers as Record<string, string>,
        ...(init?.body ? { payload: String(init.body) } : {}),
      });
      return new Response(res.body || null, { status: res.statusCode });
    };
    return runCli(["--url", "http://cds.test", "--token", ADMIN_TOKEN, ...args], {
      env: {},
      stdout: (t) => out.push(t),
      stderr: (t) => err.push(t),
      fetch: fetchThroughApp,
    }).then((code) => ({ code, out: out.join(""), err: err.join("") }));
  }

  it("raises, lists, reminds, answers and cancels through the operator API", async () => {
    const { partner, caseId } = await partnerWithCase();
    const raised = await cli([
      "rfi",
      "raise",
      "--case",
      caseId,
      "--actor",
      "jane",
      "--to",
      TEXTS.to,
      "--subject",
      "S",
      "--body",
      "B",
      "--cc",
      "a@example.com, b@example.com",
    ]);
    expect(raised.code, raised.err).toBe(0);
    const { rfiId, cc, requestedBy } = JSON.parse(raised.out);
    expect({ cc, requestedBy }).toEqual({
      cc: ["a@example.com", "b@example.com"],
      requestedBy: "analyst:jane",
    });
    expect((await cli(["rfi", "remind", "--case", caseId, "--rfi", rfiId])).code).toBe(0);
    const listed = await cli(["rfi", "list", "--case", caseId]);
    expect(JSON.parse(listed.out).informationRequests[0].reminderCount).toBe(1);
    const answered = await cli([
      "rfi",
      "answer",
      "--case",
      caseId,
      "--rfi",
      rfiId,
      "--actor",
      "jane",
      "--field",
      "phone_verified=yes",
    ]);
    expect(answered.code, answered.err).toBe(0);
    expect(JSON.parse(answered.out)).toMatchObject({ status: "answered", fieldCount: 1 });
    const cancel = await cli(["rfi", "cancel", "--case", caseId, "--rfi", rfiId]);
    expect(cancel.code).toBe(1);
    expect(cancel.err).toMatch(/HTTP 409: not_pending/);
    expect((await getRfi(partner, caseId, rfiId)).json().answer.fields).toEqual([
      { key: "phone_verified", value: "yes", label: null },
    ]);
  });
});

describe("limits on a case's information requests", () => {
  it("at most 20 pending at once, even raised all together: the 21st is 409 rfi_limit_reached", async () => {
    const partner = await createPartner(h.app);
    const caseId = await createStoredCase(h.ctx, partner.tenantId, "in_review");
    const raises = await Promise.all(
      Array.from({ length: 25 }, (_, i) =>
        h.app.inject({
          method: "POST",
          url: `/cases/${caseId}/rfi`,
          headers: partner.headers,
          payload: { to: "ada@example.com", subject: `Request ${i}`, body: "Please send a bill." },
        }),
      ),
    );
    const created = raises.filter((r) => r.statusCode === 201);
    const refused = raises.filter((r) => r.statusCode === 409);
    expect(created).toHaveLength(20);
    expect(refused).toHaveLength(5);
    expect(refused[0]?.json()).toMatchObject({ error: "rfi_limit_reached" });
    // Cancelling one frees a place.
    const cancel = await h.app.inject({
      method: "POST",
      url: `/admin/cases/${caseId}/rfi/${created[0]?.json().rfiId}/cancel`,
      headers: adminHeaders,
    });
    expect(cancel.statusCode, cancel.body).toBe(200);
    expect((await raiseRfi(h.app, partner, caseId)).rfiId).toBeTruthy();
  });

  it("a case record shows the 50 most recent requests; the list endpoint shows every one", async () => {
    const partner = await createPartner(h.app);
    const caseId = await createStoredCase(h.ctx, partner.tenantId, "in_review");
    const raised: string[] = [];
    for (let i = 0; i < 55; i++) {
      const { rfiId } = await raiseRfi(h.app, partner, caseId, { subject: `Request ${i}` });
      raised.push(rfiId);
      const cancel = await h.app.inject({
        method: "POST",
        url: `/admin/cases/${caseId}/rfi/${rfiId}/cancel`,
        headers: adminHeaders,
      });
      expect(cancel.statusCode, cancel.body).toBe(200);
    }
    const record = await h.app.inject({ url: `/cases/${caseId}`, headers: partner.headers });
    expect(record.statusCode).toBe(200);
    const shown = (record.json().informationRequests as { rfiId: string }[]).map((r) => r.rfiId);
    expect(shown).toEqual(raised.slice(5));
    const list = await h.app.inject({ url: `/cases/${caseId}/rfi`, headers: partner.headers });
    expect((list.json().informationRequests as { rfiId: string }[]).map((r) => r.rfiId)).toEqual(raised);
    const { browser } = await signedIn(h.app, partner.tenantId, "viewer");
    const page = await browser.get(`/console/cases/${caseId}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("Only the 50 most recent requests are shown.");
    expect(page.body).not.toContain("Request 4<");
    expect(page.body).toContain("Request 54");
  });
});
