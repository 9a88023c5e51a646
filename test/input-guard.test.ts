import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "./support/app.js";
import { adminHeaders, createPartner, createStoredCase, type Partner } from "./support/fixtures.js";
import { answerRfi, openRequest, raiseRfi } from "./support/rfi.js";
import { amountScreen, createWorkflow, kycSubject } from "./support/workflows.js";

/**
 * The edge refuses what PostgreSQL cannot store (NUL, lone surrogates) and JSON nested too deep,
 * naming the field, on every route: each place the attack on the landed service found a 500.
 */

const HOSTILE = { nul: "a\u0000b", surrogate: "a\ud800b" } as const;

let h: TestApp;
let partner: Partner;

beforeAll(async () => {
  h = await createTestApp();
  partner = await createPartner(h.app);
  await createWorkflow(h.app, partner.tenantId, "screen", amountScreen);
});
afterAll(async () => h?.close());

function caseBody(extra: Record<string, unknown> = {}) {
  return {
    workflowId: "screen",
    type: "KYC",
    payload: { amount: 5 },
    subject: kycSubject,
    ...extra,
  };
}

function expectRefused(
  res: { statusCode: number; body: string; headers: Record<string, unknown> },
  path: string,
) {
  expect(res.statusCode, res.body).toBe(400);
  const body = JSON.parse(res.body);
  expect(typeof body.error).toBe("string");
  expect(body.code).toBe("invalid_request");
  expect(body.details).toEqual([expect.objectContaining({ path })]);
  expect(res.headers["x-request-id"]).toBeTruthy();
}

describe.each(Object.entries(HOSTILE))("text holding a %s", (_name, bad) => {
  it("in a case's workflowId or idempotencyKey is 400 naming the field", async () => {
    for (const [field, body] of [
      ["workflowId", caseBody({ workflowId: bad })],
      ["idempotencyKey", caseBody({ idempotencyKey: bad })],
    ] as const) {
      const res = await h.app.inject({
        method: "POST",
        url: "/cases",
        headers: partner.headers,
        payload: body,
      });
      expectRefused(res, field);
    }
  });

  it("in a subject.person field is 400 before anything is stored, so no case is left in flight", async () => {
    const subject = { ...kycSubject, person: { ...kycSubject.person, firstName: bad } };
    const res = await h.app.inject({
      method: "POST",
      url: "/cases",
      headers: partner.headers,
      payload: caseBody({ subject, idempotencyKey: `person-${_name}` }),
    });
    expectRefused(res, "subject.person.firstName");
    const stored = await h.ctx.db.root
      .selectFrom("cases")
      .select("id")
      .where("idempotency_key", "=", `person-${_name}`)
      .execute();
    expect(stored).toEqual([]);
  });

  it("in a payload key is 400 naming it", async () => {
    const res = await h.app.inject({
      method: "POST",
      url: "/cases",
      headers: partner.headers,
      payload: caseBody({ payload: { amount: 5, [bad]: 1 } }),
    });
    expectRefused(res, `payload[${JSON.stringify(bad)}]`);
  });

  it("in an RFI's subject, body or templateId is 400 (RFIError) naming the field", async () => {
    const caseId = await createStoredCase(h.ctx, partner.tenantId);
    for (const field of ["subject", "body", "templateId"]) {
      const res = await h.app.inject({
        method: "POST",
        url: `/cases/${caseId}/rfi`,
        headers: partner.headers,
        payload: { to: "ada@example.com", subject: "s", body: "b", [field]: bad },
      });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json()).toMatchObject({ error: "invalid_request", details: [{ path: field }] });
    }
  });

  it("in an RFI answer's value is 422 invalid_field_value with the key; in a label it is 400", async () => {
    const { caseId, rfiId } = await openRequest(h.app, h.ctx, partner);
    const value = await answerRfi(h.app, partner, caseId, rfiId, { fields: [{ key: "city", value: bad }] });
    expect(value.statusCode, value.body).toBe(422);
    expect(value.json()).toMatchObject({ error: "invalid_field_value", key: "city" });
    const label = await answerRfi(h.app, partner, caseId, rfiId, {
      fields: [{ key: "city", value: "Paris", label: bad }],
    });
    expect(label.statusCode, label.body).toBe(400);
    expect(label.json()).toMatchObject({
      error: "invalid_request",
      details: [{ path: "fields[0].label" }],
    });
    const analyst = await h.app.inject({
      method: "POST",
      url: `/admin/cases/${caseId}/rfi/${rfiId}/answer`,
      headers: adminHeaders,
      payload: { fields: [{ key: "city", value: bad }], documents: [], actor: "jane" },
    });
    expect(analyst.statusCode, analyst.body).toBe(422);
    expect(analyst.json()).toMatchObject({ error: "invalid_field_value", key: "city" });
  });

  it("in a customer attribute's value or the customer id is 400 naming the field", async () => {
    for (const [path, payload] of [
      ["attributes.segment", { externalCustomerId: "cust-1", attributes: { segment: bad } }],
      ["externalCustomerId", { externalCustomerId: bad, attributes: { segment: "retail" } }],
    ] as const) {
      const res = await h.app.inject({
        method: "POST",
        url: "/customer-attributes",
        headers: partner.headers,
        payload,
      });
      expectRefused(res, path);
    }
  });

  it("in a tenant's or a key's name is 400 naming the field", async () => {
    const tenant = await h.app.inject({
      method: "POST",
      url: "/admin/tenants",
      headers: adminHeaders,
      payload: { name: bad },
    });
    expectRefused(tenant, "name");
    const key = await h.app.inject({
      method: "POST",
      url: `/admin/tenants/${partner.tenantId}/api-keys`,
      headers: adminHeaders,
      payload: { name: bad, scopes: ["cases:read"] },
    });
    expectRefused(key, "name");
  });

  it("in an override's reason is 400 naming the field", async () => {
    const caseId = await createStoredCase(h.ctx, partner.tenantId, "in_review");
    const res = await h.app.inject({
      method: "POST",
      url: `/admin/cases/${caseId}/decision`,
      headers: adminHeaders,
      payload: { value: "approved", actor: "jane", reason: bad },
    });
    expectRefused(res, "reason");
  });
});

describe("path and query parameters", () => {
  it("a NUL in a callback reference or a key id is 400 naming the parameter", async () => {
    const caseId = await createStoredCase(h.ctx, partner.tenantId);
    const callback = await h.app.inject({
      method: "POST",
      url: `/cases/${caseId}/callbacks/a%00b`,
      headers: partner.headers,
      payload: {},
    });
    expectRefused(callback, "callbackRef");
    const key = await h.app.inject({
      method: "DELETE",
      url: `/admin/tenants/${partner.tenantId}/api-keys/a%00`,
      headers: adminHeaders,
    });
    expectRefused(key, "keyId");
  });

  it("a NUL in a query parameter is 400 naming it; an encoded surrogate decodes harmlessly", async () => {
    const res = await h.app.inject({
      method: "GET",
      url: "/cases?externalCustomerId=%ED%A0%80",
      headers: partner.headers,
    });
    // %ED%A0%80 is the UTF-8 spelling of U+D800, which decodes to U+FFFD and is harmless;
    // a JavaScript client's own lone surrogate cannot even be percent-encoded, so only NUL remains.
    expect(res.statusCode).toBe(200);
    const nul = await h.app.inject({
      method: "GET",
      url: "/cases?externalCustomerId=a%00",
      headers: partner.headers,
    });
    expectRefused(nul, "externalCustomerId");
  });

  it("a GET /cases cursor whose id is not a UUID is 400", async () => {
    const forged = Buffer.from(`${new Date().toISOString()}|${"-".repeat(36)}`).toString("base64url");
    const res = await h.app.inject({
      method: "GET",
      url: `/cases?cursor=${forged}`,
      headers: partner.headers,
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().details).toEqual([{ path: "cursor", message: "is invalid" }]);
    const farPast = Buffer.from(`-271821-04-20T00:00:00.000Z|${crypto.randomUUID()}`).toString("base64url");
    const past = await h.app.inject({
      method: "GET",
      url: `/cases?cursor=${farPast}`,
      headers: partner.headers,
    });
    expect(past.statusCode, past.body).toBe(400);
  });
});

describe("nesting", () => {
  function nested(depth: number): unknown {
    let value: unknown = 1;
    for (let i = 0; i < depth; i++) value = { a: value };
    return value;
  }

  it("a payload nested 5,000 deep is 400, without a stack overflow", async () => {
    const deep = `${'{"a":'.repeat(5000)}1${"}".repeat(5000)}`;
    const res = await h.app.inject({
      method: "POST",
      url: "/cases",
      headers: { ...partner.headers, "content-type": "application/json" },
      payload: JSON.stringify(caseBody({ payload: { amount: 5, deep: "DEEP" } })).replace('"DEEP"', deep),
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().error).toMatch(/nested deeper than 64 levels/);
  });

  it("64 levels are accepted and 65 refused (the body object is level 1)", async () => {
    const ok = await h.app.inject({
      method: "POST",
      url: "/cases",
      headers: partner.headers,
      // body (1) → payload (2) → deep's 62 objects reach level 64.
      payload: caseBody({ payload: { amount: 5, deep: nested(62) } }),
    });
    expect(ok.statusCode, ok.body).toBe(201);
    const over = await h.app.inject({
      method: "POST",
      url: "/cases",
      headers: partner.headers,
      payload: caseBody({ payload: { amount: 5, deep: nested(63) } }),
    });
    expect(over.statusCode, over.body).toBe(400);
  });
});

describe("errors the router answers", () => {
  it("a malformed percent-encoding in the path is 400 in the service's shape, with X-Request-Id", async () => {
    const res = await h.app.inject({ method: "GET", url: "/cases/%zz", headers: partner.headers });
    expect(res.statusCode).toBe(400);
    expect(res.headers["x-request-id"]).toBeTruthy();
    expect(res.json()).toEqual({ error: expect.stringMatching(/not a valid URL/), code: "invalid_request" });
  });

  it("headers over the limit are 431 in the service's shape, with X-Request-Id", async () => {
    const base = await h.app.listen({ port: 0, host: "127.0.0.1" });
    const port = (h.app.server.address() as AddressInfo).port;
    expect(base).toContain(String(port));
    const answer = await new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>(
      (resolve, reject) => {
        const req = http.request(
          { host: "127.0.0.1", port, path: "/health", headers: { "x-filler": "x".repeat(20_000) } },
          (res) => {
            let body = "";
            res.on("data", (c) => {
              body += c;
            });
            res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
          },
        );
        req.on("error", reject);
        req.end();
      },
    );
    expect(answer.status).toBe(431);
    expect(answer.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.parse(answer.body)).toMatchObject({ error: expect.any(String), code: "headers_too_large" });
  });
});

describe("raising an RFI with a surrogate pair (valid text) still works", () => {
  it("an emoji in the subject is stored as sent", async () => {
    const caseId = await createStoredCase(h.ctx, partner.tenantId);
    const rfi = await raiseRfi(h.app, partner, caseId, { subject: "Proof of address \ud83d\udcc4" });
    expect(rfi.subject).toBe("Proof of address \ud83d\udcc4");
  });
});
