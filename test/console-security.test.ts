import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "./support/app.js";
import { ConsoleClient, signedIn } from "./support/console.js";
import { createPartner, createStoredCase, createTenant } from "./support/fixtures.js";
import { raiseRfi } from "./support/rfi.js";

/**
 * The security tests of every console route, adapted to sessions: no session (or a made-up
 * one) goes to the sign-in page, a role without the permission gets 403.
 */
let h: TestApp;
let caseId: string;
let tenantId: string;
const ID = "00000000-0000-4000-8000-000000000000";

beforeAll(async () => {
  h = await createTestApp();
  tenantId = await createTenant(h.app);
  caseId = await createStoredCase(h.ctx, tenantId, "in_review");
});

afterAll(async () => {
  await h.close();
});

const pages = () => [
  "/console/queue",
  `/console/cases/${caseId}`,
  `/console/cases/${caseId}/documents/${ID}`,
  "/console/audit",
  "/console/settings",
  "/console/settings/api-keys",
  "/console/settings/tags",
  "/console/settings/webhooks",
  "/console/settings/providers",
  "/console/settings/users",
];

const reviewPosts = () => [
  `/console/cases/${caseId}/decision`,
  `/console/cases/${caseId}/close`,
  `/console/cases/${caseId}/tags`,
  `/console/cases/${caseId}/tags/remove`,
  `/console/cases/${caseId}/rfi`,
  `/console/cases/${caseId}/rfi/${ID}/remind`,
  `/console/cases/${caseId}/rfi/${ID}/cancel`,
  `/console/cases/${caseId}/rfi/${ID}/answer`,
  `/console/cases/${caseId}/screening`,
  `/console/cases/${caseId}/provider-actions`,
];

const adminPosts = () => [
  "/console/settings/api-keys",
  "/console/settings/api-keys/key_x/delete",
  "/console/settings/tags",
  "/console/settings/webhooks",
  "/console/settings/webhooks/default/delete",
  "/console/settings/webhooks/default/test",
  `/console/settings/webhooks/deliveries/${ID}/redeliver`,
  "/console/settings/users",
  `/console/settings/users/${ID}/role`,
  `/console/settings/users/${ID}/setup-link`,
  `/console/settings/users/${ID}/delete`,
];

describe("console routes without a session", () => {
  it("every page sends the browser to sign in, with the page to come back to", async () => {
    for (const url of pages()) {
      for (const cookie of [undefined, "cds_console=made-up-session-token"]) {
        const res = await h.app.inject({ url, headers: cookie ? { cookie } : {} });
        expect(res.statusCode, url).toBe(303);
        expect(res.headers.location).toBe(`/console/sign-in?next=${encodeURIComponent(url)}`);
      }
    }
  });

  it("every form post goes to the sign-in page and changes nothing; the upload slot answers 401", async () => {
    for (const url of [...reviewPosts(), ...adminPosts()]) {
      const res = await h.app.inject({
        method: "POST",
        url,
        headers: { "content-type": "application/x-www-form-urlencoded", cookie: "cds_console=made-up" },
        payload: "value=approved&reason=x",
      });
      expect(res.statusCode, url).toBe(303);
      expect(res.headers.location).toBe("/console/sign-in");
    }
    const slot = await h.app.inject({
      method: "POST",
      url: `/console/cases/${caseId}/rfi/${ID}/uploads`,
      payload: { filename: "a.pdf", contentType: "application/pdf", sizeBytes: 3 },
    });
    expect(slot.statusCode).toBe(401);
    const row = await h.ctx.db.root
      .selectFrom("cases")
      .select("status")
      .where("id", "=", caseId)
      .executeTakeFirstOrThrow();
    expect(row.status).toBe("in_review");
  });
});

describe("console routes without the permission", () => {
  it("a viewer gets 403 on every review action and every admin action", async () => {
    const { browser } = await signedIn(h.app, tenantId, "viewer");
    await browser.get("/console/queue");
    for (const url of [...reviewPosts(), ...adminPosts()]) {
      expect((await browser.post(url, { value: "approved", reason: "x" })).statusCode, url).toBe(403);
    }
    const slot = await browser.postJson(`/console/cases/${caseId}/rfi/${ID}/uploads`, {
      filename: "a.pdf",
      contentType: "application/pdf",
      sizeBytes: 3,
    });
    expect(slot.statusCode).toBe(403);
  });

  it("an analyst gets 403 on every admin action and page", async () => {
    const { browser } = await signedIn(h.app, tenantId, "analyst");
    await browser.get("/console/queue");
    for (const url of adminPosts()) expect((await browser.post(url, {})).statusCode, url).toBe(403);
    for (const url of pages().filter((p) => p.startsWith("/console/settings"))) {
      expect((await browser.get(url)).statusCode, url).toBe(403);
    }
  });

  it("an unknown console address is a 404 page", async () => {
    const res = await new ConsoleClient(h.app).get("/console/nowhere");
    expect(res.statusCode).toBe(404);
    expect(res.headers["content-type"]).toMatch(/^text\/html/);
  });
});

describe("console input", () => {
  it("refuses a NUL character, a bad address and out-of-range numbers with 400, never 5xx", async () => {
    const analyst = await signedIn(h.app, tenantId, "analyst");
    await analyst.browser.get(`/console/cases/${caseId}`);
    const nul = await analyst.browser.post(`/console/cases/${caseId}/decision`, {
      value: "approved",
      reason: "a\u0000b",
    });
    expect(nul.statusCode).toBe(400);
    const badAddress = await analyst.browser.post(`/console/cases/${caseId}/rfi`, {
      to: "not an address",
      subject: "Proof",
      body: "Please",
    });
    expect(badAddress.statusCode).toBe(400);
    expect(badAddress.body).toContain('id="rfi-to-error"');
    const badDeadline = await analyst.browser.post(`/console/cases/${caseId}/rfi`, {
      to: "ada@example.com",
      subject: "Proof",
      body: "Please",
      expiresAt: "yesterday",
    });
    expect(badDeadline.statusCode).toBe(400);
    const rfis = await h.ctx.db.root
      .selectFrom("information_requests")
      .select("id")
      .where("case_id", "=", caseId)
      .execute();
    expect(rfis).toEqual([]);

    const admin = await signedIn(h.app, tenantId, "admin");
    await admin.browser.get("/console/settings/webhooks");
    for (const [maxAttempts, timeoutMs] of [
      ["0", "1000"],
      ["21", "1000"],
      ["5", "99"],
      ["5", "30001"],
      ["x", "1000"],
    ]) {
      const res = await admin.browser.post("/console/settings/webhooks", {
        webhookKey: "default",
        url: "https://hooks.example.com/x",
        secretId: "s1",
        secret: "a-signing-secret-of-32-characters",
        maxAttempts: maxAttempts as string,
        timeoutMs: timeoutMs as string,
      });
      expect(res.statusCode, `${maxAttempts} ${timeoutMs}`).toBe(400);
    }
  });

  it("/console without a trailing slash leads to sign-in", async () => {
    const res = await h.app.inject({ url: "/console" });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/console/sign-in");
  });
});

describe("what is not a form", () => {
  it("sign-in and setup refuse JSON bodies and non-string values with 400, never 5xx", async () => {
    const browser = new ConsoleClient(h.app);
    await browser.get("/console/sign-in");
    for (const [url, body] of [
      ["/console/sign-in", { email: 5, password: { a: 1 } }],
      ["/console/sign-in", { email: "a@example.com", password: "correct horse" }],
      ["/console/setup", { token: [1], password: 2, confirm: 2 }],
    ] as const) {
      const res = await browser.postJson(url, body);
      expect(res.statusCode, url).toBe(400);
      expect(res.body).toContain("application/x-www-form-urlencoded");
    }
  });

  it("a repeated query parameter is read as its first value, never a 500", async () => {
    for (const url of [
      "/console/setup?token=a&token=b",
      "/console/sign-in?next=/console/queue&next=/console/audit",
      "/console/sign-in?done=password&done=x",
    ]) {
      const res = await h.app.inject({ url });
      expect(res.statusCode, url).toBeLessThan(500);
    }
  });

  it("an asset named like an object's own property (__proto__, constructor) is 404", async () => {
    for (const name of ["__proto__", "constructor", "toString"]) {
      const res = await h.app.inject({ url: `/console/assets/${name}` });
      expect(res.statusCode, name).toBe(404);
    }
  });

  it("a refused upload slot answers its 4xx as JSON with a code", async () => {
    const partner = await createPartner(h.app);
    const ownCase = await createStoredCase(h.ctx, partner.tenantId, "in_review");
    const { rfiId } = await raiseRfi(h.app, partner, ownCase);
    const { browser } = await signedIn(h.app, partner.tenantId, "analyst");
    await browser.get(`/console/cases/${ownCase}`);
    const res = await browser.postJson(`/console/cases/${ownCase}/rfi/${rfiId}/uploads`, {
      filename: "",
      contentType: "application/pdf",
      sizeBytes: 3,
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: "invalid_request" });
    expect(res.json().error).toMatch(/filename/);
  });
});
