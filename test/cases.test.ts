import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createTestApp, type TestApp } from "./support/app.js";
import { createPartner, type Partner } from "./support/fixtures.js";
import { securityTests } from "./support/security.js";
import { amountScreen, createWorkflow, kycSubject, transactionSubject } from "./support/workflows.js";

let h: TestApp;
beforeAll(async () => {
  h = await createTestApp();
});
afterAll(async () => {
  await h.close();
});

async function partnerWithWorkflow(): Promise<Partner> {
  const partner = await createPartner(h.app);
  await createWorkflow(h.app, partner.tenantId, "screen", amountScreen);
  return partner;
}

function submit(partner: Partner, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  return h.app.inject({
    method: "POST",
    url: "/cases",
    headers: { ...partner.headers, ...headers },
    payload: body,
  });
}

const kycCase = (extra: Record<string, unknown> = {}) => ({
  workflowId: "screen",
  type: "KYC",
  payload: { amount: 10 },
  subject: kycSubject,
  ...extra,
});

const transactionCase = (extra: Record<string, unknown> = {}) => ({
  workflowId: "screen",
  type: "Transaction",
  payload: { amount: 10 },
  subject: transactionSubject,
  eventTimestamp: new Date(Date.now() - 60_000).toISOString(),
  ...extra,
});

function problemPaths(res: { json(): { details?: { path: string }[] } }): string[] {
  return (res.json().details ?? []).map((d) => d.path);
}

describe("POST /cases", () => {
  securityTests(() => h, {
    scope: "cases:write",
    ownsResource: false,
    async request() {
      return { method: "POST", url: "/cases", payload: kycCase() };
    },
  });

  it("answers 201 with the case id, the request id and status received", async () => {
    const partner = await partnerWithWorkflow();
    const res = await submit(partner, kycCase(), { "x-request-id": "req-abc-123" });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body).toEqual({
      caseId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      requestId: "req-abc-123",
      status: "received",
    });
  });

  it("gives each case an id that begins with the time it was accepted (UUID version 7)", async () => {
    const partner = await partnerWithWorkflow();
    const before = Date.now();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await submit(partner, kycCase());
      expect(res.statusCode).toBe(201);
      ids.push(res.json().caseId);
    }
    const after = Date.now();
    const times = ids.map((id) => {
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      return Number.parseInt(id.replaceAll("-", "").slice(0, 12), 16);
    });
    for (const t of times) {
      expect(t).toBeGreaterThanOrEqual(before);
      expect(t).toBeLessThanOrEqual(after);
    }
    // Each was submitted after the last was answered: its time is never earlier (two made in one
    // millisecond are ordered by their random part).
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    expect(new Set(ids).size).toBe(3);
  });

  // The embedded database reads the service's own clock: the two cannot disagree there.
  it.skipIf(!process.env.DATABASE_URL)(
    "raises an acceptance time far behind the database's clock to a second before its insert",
    async () => {
      const partner = await partnerWithWorkflow();
      // The service's clock an hour behind the database's (performance's clock is not faked).
      const real = () => performance.timeOrigin + performance.now();
      const before = real();
      vi.useFakeTimers({ toFake: ["Date"] });
      let res: Awaited<ReturnType<typeof submit>>;
      try {
        vi.setSystemTime(before - 3_600_000);
        res = await submit(partner, kycCase());
      } finally {
        vi.useRealTimers();
      }
      const after = real();
      expect(res.statusCode, res.body).toBe(201);
      const record = await h.app.inject({
        method: "GET",
        url: `/cases/${res.json().caseId}`,
        headers: partner.headers,
      });
      const createdAt = Date.parse(record.json().createdAt);
      expect(createdAt).toBeGreaterThanOrEqual(Math.floor(before) - 1_001);
      expect(createdAt).toBeLessThanOrEqual(after - 999);
    },
  );

  it("keeps metadata, ignores a tenantId in the body, and extracts the external customer id", async () => {
    const partner = await partnerWithWorkflow();
    const other = await createPartner(h.app);
    const res = await submit(
      partner,
      kycCase({ metadata: { channel: "app", batch: 7 }, tenantId: other.tenantId }),
    );
    expect(res.statusCode).toBe(201);
    const record = await h.app.inject({
      method: "GET",
      url: `/cases/${res.json().caseId}`,
      headers: partner.headers,
    });
    expect(record.json()).toMatchObject({
      metadata: { channel: "app", batch: 7 },
      externalCustomerId: "cust-42",
    });
    const stranger = await h.app.inject({
      method: "GET",
      url: `/cases/${res.json().caseId}`,
      headers: other.headers,
    });
    expect(stranger.statusCode).toBe(404);
  });

  it("takes the external customer id from the first transaction party that has one, or none", async () => {
    const partner = await partnerWithWorkflow();
    const withId = await submit(partner, transactionCase());
    const record = await h.app.inject({
      method: "GET",
      url: `/cases/${withId.json().caseId}`,
      headers: partner.headers,
    });
    expect(record.json().externalCustomerId).toBe("cust-7");
    const business = await submit(partner, {
      workflowId: "screen",
      type: "KYB",
      payload: { amount: 1 },
      subject: { business: { legalName: "Acme Ltd", country: "DE" } },
    });
    const kyb = await h.app.inject({
      method: "GET",
      url: `/cases/${business.json().caseId}`,
      headers: partner.headers,
    });
    expect(kyb.json().externalCustomerId).toBeNull();
  });

  it("requires the sub-struct matching the type, and only that one", async () => {
    const partner = await partnerWithWorkflow();
    const missing = await submit(partner, kycCase({ subject: { displayName: "x" } }));
    expect(missing.statusCode).toBe(400);
    expect(problemPaths(missing)).toContain("subject.person");
    const wrong = await submit(partner, kycCase({ subject: { business: { legalName: "Acme" } } }));
    expect(problemPaths(wrong)).toEqual(expect.arrayContaining(["subject.person", "subject.business"]));
    const both = await submit(
      partner,
      kycCase({ subject: { ...kycSubject, transaction: transactionSubject.transaction } }),
    );
    expect(both.statusCode).toBe(400);
    expect(problemPaths(both)).toContain("subject.transaction");
  });

  it("answers 400 naming the field for a value outside each enumeration", async () => {
    const partner = await partnerWithWorkflow();
    const tx = transactionSubject.transaction;
    const cases: Array<[string, Record<string, unknown>]> = [
      ["type", { type: "Loan" }],
      ["direction", { subject: { transaction: { ...tx, direction: "sideways" } } }],
      ["method", { subject: { transaction: { ...tx, method: "cheque" } } }],
      ["transaction.type", { subject: { transaction: { ...tx, type: "gift" } } }],
      ["currency", { subject: { transaction: { ...tx, currency: "EURO" } } }],
      ["currency", { subject: { transaction: { ...tx, currency: "ZZZ" } } }],
      ["role", { subject: { transaction: { ...tx, parties: [{ role: "boss" }] } } }],
      [
        "identifiers",
        {
          subject: {
            transaction: {
              ...tx,
              parties: [{ role: "sender", identifiers: [{ type: "shoe_size", value: "9" }] }],
            },
          },
        },
      ],
    ];
    for (const [field, change] of cases) {
      const res = await submit(partner, transactionCase(change));
      expect(res.statusCode, field).toBe(400);
      expect(res.json().error, field).toMatch(field.split(".").at(-1) as string);
    }
  });

  it("checks ISO country codes and calendar dates of a person", async () => {
    const partner = await partnerWithWorkflow();
    const res = await submit(
      partner,
      kycCase({
        subject: { person: { nationality: "XX", dateOfBirth: "1990-02-30", address: { country: "gb" } } },
      }),
    );
    expect(res.statusCode).toBe(400);
    expect(problemPaths(res)).toEqual(
      expect.arrayContaining([
        "subject.person.nationality",
        "subject.person.dateOfBirth",
        "subject.person.address.country",
      ]),
    );
  });

  it("requires eventTimestamp on a Transaction case, with an offset, and not too far in the future", async () => {
    const partner = await partnerWithWorkflow();
    const { eventTimestamp: _omit, ...withoutTimestamp } = transactionCase();
    const missing = await submit(partner, withoutTimestamp);
    expect(missing.statusCode).toBe(400);
    expect(problemPaths(missing)).toEqual(["eventTimestamp"]);
    for (const bad of ["yesterday", "2026-01-01T10:00:00", "2026-13-01T10:00:00Z", "2026-02-30T10:00:00Z"]) {
      const res = await submit(partner, transactionCase({ eventTimestamp: bad }));
      expect(res.statusCode, bad).toBe(400);
      expect(res.json().error, bad).toMatch(/eventTimestamp/);
    }
    const farFuture = new Date(Date.now() + 6 * 60_000).toISOString();
    const future = await submit(partner, transactionCase({ eventTimestamp: farFuture }));
    expect(future.statusCode).toBe(400);
    expect(future.json().error).toMatch(/future/);
    const nearFuture = new Date(Date.now() + 4 * 60_000).toISOString().replace("Z", "+00:00");
    expect((await submit(partner, transactionCase({ eventTimestamp: nearFuture }))).statusCode).toBe(201);
  });

  it("answers 400 listing every path where the payload fails the workflow's input schema", async () => {
    const partner = await partnerWithWorkflow();
    const res = await submit(partner, kycCase({ payload: { country: 5 } }));
    expect(res.statusCode).toBe(400);
    const paths = problemPaths(res);
    expect(paths.some((p) => p.includes("amount"))).toBe(true);
    expect(paths.some((p) => p.includes("country"))).toBe(true);
  });

  it("routes to the current published version, or the pinned one if it was published", async () => {
    const partner = await createPartner(h.app);
    await createWorkflow(h.app, partner.tenantId, "screen", amountScreen);
    await createWorkflow(h.app, partner.tenantId, "screen", amountScreen);
    await createWorkflow(h.app, partner.tenantId, "screen", amountScreen, { publish: false });
    const versionOf = async (res: { json(): { caseId: string } }) =>
      (
        await h.app.inject({ method: "GET", url: `/cases/${res.json().caseId}`, headers: partner.headers })
      ).json().workflowVersion;
    expect(await versionOf(await submit(partner, kycCase()))).toBe(2);
    expect(await versionOf(await submit(partner, kycCase({ workflowVersion: 1 })))).toBe(1);
    const unpublished = await submit(partner, kycCase({ workflowVersion: 3 }));
    expect(unpublished.statusCode).toBe(400);
    const unknown = await submit(partner, kycCase({ workflowVersion: 9 }));
    expect(unknown.statusCode).toBe(400);
  });

  it("answers 400 for an unknown workflow and for one without a published version", async () => {
    const partner = await createPartner(h.app);
    const unknown = await submit(partner, kycCase({ workflowId: "nope" }));
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().error).toMatch(/nope/);
    await createWorkflow(h.app, partner.tenantId, "draft", amountScreen, { publish: false });
    const draft = await submit(partner, kycCase({ workflowId: "draft" }));
    expect(draft.statusCode).toBe(400);
  });

  it("answers 200 with the same case for a known idempotency key, per tenant", async () => {
    const partner = await partnerWithWorkflow();
    const first = await submit(partner, kycCase({ idempotencyKey: "order-1" }));
    expect(first.statusCode).toBe(201);
    const again = await submit(partner, kycCase({ idempotencyKey: "order-1", payload: { amount: 99999 } }));
    expect(again.statusCode).toBe(200);
    expect(again.json().caseId).toBe(first.json().caseId);
    const other = await partnerWithWorkflow();
    const elsewhere = await submit(other, kycCase({ idempotencyKey: "order-1" }));
    expect(elsewhere.statusCode).toBe(201);
    expect(elsewhere.json().caseId).not.toBe(first.json().caseId);
  });

  it("creates exactly one case when 50 submissions race with one idempotency key", async () => {
    const partner = await partnerWithWorkflow();
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => submit(partner, kycCase({ idempotencyKey: "race-1" }))),
    );
    const statuses = answers.map((r) => r.statusCode).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 200)).toHaveLength(49);
    expect(new Set(answers.map((r) => r.json().caseId)).size).toBe(1);
    const count = await h.ctx.db.root
      .selectFrom("cases")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("tenant_id", "=", partner.tenantId)
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(1);
  });
});

describe("GET /cases/{caseId}", () => {
  securityTests(() => h, {
    scope: "cases:read",
    async request(harness, owner) {
      await createWorkflow(harness.app, owner.tenantId, "screen", amountScreen);
      const res = await harness.app.inject({
        method: "POST",
        url: "/cases",
        headers: owner.headers,
        payload: kycCase(),
      });
      return { method: "GET", url: `/cases/${res.json().caseId}` };
    },
  });

  it("returns the full case record of the contract", async () => {
    const partner = await partnerWithWorkflow();
    const created = await submit(partner, transactionCase({ metadata: { source: "test" } }));
    const res = await h.app.inject({
      method: "GET",
      url: `/cases/${created.json().caseId}`,
      headers: partner.headers,
    });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(
      [
        "caseId",
        "requestId",
        "status",
        "type",
        "workflowId",
        "workflowVersion",
        "subject",
        "payload",
        "metadata",
        "externalCustomerId",
        "eventTimestamp",
        "createdAt",
        "updatedAt",
        "dryRun",
        "result",
        "error",
        "tags",
        "informationRequests",
      ].sort(),
    );
    expect(body).toMatchObject({
      caseId: created.json().caseId,
      type: "Transaction",
      workflowId: "screen",
      workflowVersion: 1,
      subject: transactionSubject,
      payload: { amount: 10 },
      dryRun: false,
      result: { decision: null, decisionHistory: [], workflow_result: null },
      tags: [],
      informationRequests: [],
    });
    expect(new Date(body.eventTimestamp).getTime()).toBeLessThan(Date.now());
  });

  it("gives back payload, subject and metadata with their keys in the order they were sent", async () => {
    const partner = await partnerWithWorkflow();
    const payload = { zeta: 1, amount: 10, a: 2 };
    const metadata = { source: "batch", id: 9, channel: "api" };
    const created = await submit(partner, kycCase({ payload, metadata }));
    const res = await h.app.inject({
      method: "GET",
      url: `/cases/${created.json().caseId}`,
      headers: partner.headers,
    });
    expect(Object.keys(res.json().payload)).toEqual(["zeta", "amount", "a"]);
    expect(Object.keys(res.json().metadata)).toEqual(["source", "id", "channel"]);
    expect(Object.keys(res.json().subject.person)).toEqual(Object.keys(kycSubject.person));
  });

  it("answers 404 for an unknown or malformed case id", async () => {
    const partner = await partnerWithWorkflow();
    for (const id of ["7a1c3c52-0000-4000-8000-000000000000", "abc"]) {
      const res = await h.app.inject({ method: "GET", url: `/cases/${id}`, headers: partner.headers });
      expect(res.statusCode).toBe(404);
    }
  });
});
