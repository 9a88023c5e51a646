import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ERROR_CODES, ERRORS } from "../src/platform/errors.js";
import { createTestApp, type TestApp } from "./support/app.js";
import { adminHeaders, createPartner, createStoredCase, type Partner } from "./support/fixtures.js";
import { amountScreen, createWorkflow, kycSubject, transactionSubject } from "./support/workflows.js";

let h: TestApp;
let partner: Partner;
beforeAll(async () => {
  h = await createTestApp();
  partner = await createPartner(h.app);
  await createWorkflow(h.app, partner.tenantId, "screen", amountScreen);
});
afterAll(async () => {
  await h.close();
});

describe("the error catalogue", () => {
  it("docs/errors.md lists exactly the catalogue's codes, each with its status", () => {
    const doc = fs.readFileSync(new URL("../docs/errors.md", import.meta.url), "utf8");
    const rows = [...doc.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \|/gm)].map((m) => [m[1], Number(m[2])]);
    expect(rows).toEqual(ERROR_CODES.map((code) => [code, ERRORS[code]]));
  });
});

describe("error bodies", () => {
  it("are {error, code} with the catalogue's code on partner, operator and unrouted requests", async () => {
    const answers = await Promise.all([
      h.app.inject({ method: "GET", url: "/cases/00000000-0000-4000-8000-000000000000" }),
      h.app.inject({
        method: "GET",
        url: "/cases/00000000-0000-4000-8000-000000000000",
        headers: partner.headers,
      }),
      h.app.inject({ method: "GET", url: "/admin/tenants/nope/api-keys", headers: adminHeaders }),
      h.app.inject({ method: "GET", url: "/no/such/route" }),
    ]);
    expect(answers.map((r) => [r.statusCode, r.json()])).toEqual([
      [401, { error: "missing API key: send it in the X-API-Key header", code: "unauthenticated" }],
      [404, { error: "case not found", code: "not_found" }],
      [404, { error: "tenant not found", code: "not_found" }],
      [404, { error: "route GET /no/such/route not found", code: "not_found" }],
    ]);
  });

  it("keep the RFIError shape on the information-request endpoints", async () => {
    const caseId = await createStoredCase(h.ctx, partner.tenantId);
    const res = await h.app.inject({
      method: "POST",
      url: `/cases/${caseId}/rfi`,
      headers: partner.headers,
      payload: { to: "nope", subject: "", body: "Send your passport" },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      error: "invalid_request",
      message: 'invalid request: to must match format "email"; subject must NOT have fewer than 1 characters',
      details: [
        { path: "to", message: 'must match format "email"' },
        { path: "subject", message: "must NOT have fewer than 1 characters" },
      ],
    });
  });
});

describe("validation", () => {
  it("lists every problem of a case submission in one answer, schema and business rules alike", async () => {
    const res = await h.app.inject({
      method: "POST",
      url: "/cases",
      headers: partner.headers,
      payload: {
        workflowId: "screen",
        type: "Transaction",
        payload: { amount: "ten" },
        subject: {
          ...transactionSubject,
          transaction: { ...transactionSubject.transaction, amount: "12", currency: "EUX" },
          person: kycSubject.person,
        },
        eventTimestamp: new Date(Date.now() + 3_600_000).toISOString(),
        colour: "blue",
      },
    });
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body.code).toBe("invalid_request");
    expect(body.details).toEqual(
      expect.arrayContaining([
        { path: "colour", message: "is not a known property" },
        { path: "subject.transaction.amount", message: "must be number" },
        { path: "subject.transaction.currency", message: "must be an ISO 4217 currency code" },
        { path: "subject.person", message: "must not be set on a Transaction case" },
        { path: "eventTimestamp", message: expect.stringMatching(/in the future$/) },
        { path: "payload.amount", message: expect.any(String) },
      ]),
    );
    for (const detail of body.details) expect(body.error).toContain(`${detail.path} ${detail.message}`);
  });

  it("refuses unknown properties on every endpoint alike, nested ones included", async () => {
    const caseId = await createStoredCase(h.ctx, partner.tenantId);
    const answers = await Promise.all([
      h.app.inject({
        method: "POST",
        url: `/cases/${caseId}/rfi`,
        headers: partner.headers,
        payload: { to: "ada@example.com", subject: "Passport", body: "Send it", priority: "high" },
      }),
      h.app.inject({
        method: "POST",
        url: "/admin/tenants",
        headers: adminHeaders,
        payload: { name: "Acme", plan: "gold" },
      }),
      h.app.inject({
        method: "POST",
        url: "/cases",
        headers: partner.headers,
        payload: {
          workflowId: "screen",
          type: "KYC",
          payload: { amount: 1 },
          subject: { ...kycSubject, person: { ...kycSubject.person, shoeSize: 42 } },
        },
      }),
    ]);
    expect(answers.map((r) => [r.statusCode, r.json().details])).toEqual([
      [400, [{ path: "priority", message: "is not a known property" }]],
      [400, [{ path: "plan", message: "is not a known property" }]],
      [400, [{ path: "subject.person.shoeSize", message: "is not a known property" }]],
    ]);
  });

  it("ignores a tenantId at the top of any body", async () => {
    const other = await createPartner(h.app);
    const created = await h.app.inject({
      method: "POST",
      url: "/admin/tenants",
      headers: adminHeaders,
      payload: { name: "Globex", tenantId: other.tenantId },
    });
    expect(created.statusCode).toBe(201);
    expect(created.json().tenantId).not.toBe(other.tenantId);
  });

  it("writes array elements with brackets and names query parameters bare", async () => {
    const keys = await h.app.inject({
      method: "POST",
      url: `/admin/tenants/${partner.tenantId}/api-keys`,
      headers: adminHeaders,
      payload: { name: "k", scopes: ["cases:read", "cases:admin"] },
    });
    expect(keys.json().details).toEqual([
      { path: "scopes[1]", message: expect.stringMatching(/^must be one of: /) },
    ]);
    const list = await h.app.inject({ method: "GET", url: "/cases?limit=0", headers: partner.headers });
    expect(list.json().details).toEqual([{ path: "limit", message: "must be >= 1" }]);
  });

  it("runs a dry run on the path's workflow and version, whatever workflowId and workflowVersion the submission names", async () => {
    const url = `/admin/tenants/${partner.tenantId}/workflows/screen/versions/1/dry-run`;
    const submission = { type: "KYC", payload: { amount: 5 }, subject: kycSubject };
    for (const named of [
      { workflowId: "screen", workflowVersion: 1 },
      { workflowId: "another", workflowVersion: 2 },
    ]) {
      const res = await h.app.inject({
        method: "POST",
        url,
        headers: adminHeaders,
        payload: { ...submission, ...named },
      });
      expect(res.statusCode).toBe(201);
      expect(res.json()).toMatchObject({ dryRun: true, workflowId: "screen", workflowVersion: 1 });
    }
  });
});
