import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "./support/app.js";
import { ConsoleClient, signedIn } from "./support/console.js";
import { adminHeaders, createPartner, createTenant } from "./support/fixtures.js";
import { Receiver } from "./support/receiver.js";

let h: TestApp;
let receiver: Receiver;

beforeAll(async () => {
  h = await createTestApp();
  await h.startWorker();
  receiver = await Receiver.start();
});

afterAll(async () => {
  await receiver.close();
  await h.close();
});

const PAGES = [
  "/console/settings/api-keys",
  "/console/settings/tags",
  "/console/settings/webhooks",
  "/console/settings/providers",
  "/console/settings/users",
];

describe("settings access", () => {
  it("sends a browser without a session to sign in, refuses viewers and analysts with 403, opens for admins", async () => {
    const tenantId = await createTenant(h.app);
    const viewer = await signedIn(h.app, tenantId, "viewer");
    const analyst = await signedIn(h.app, tenantId, "analyst");
    const admin = await signedIn(h.app, tenantId, "admin");
    for (const url of PAGES) {
      expect((await new ConsoleClient(h.app).get(url)).statusCode, url).toBe(303);
      expect((await viewer.browser.get(url)).statusCode, url).toBe(403);
      expect((await analyst.browser.get(url)).statusCode, url).toBe(403);
      expect((await admin.browser.get(url)).statusCode, url).toBe(200);
    }
    const viewerPage = await viewer.browser.get("/console/queue");
    expect(viewerPage.body).not.toContain('href="/console/settings"');
    expect(
      await analyst.browser.post("/console/settings/api-keys", { name: "x", scopes: "cases:read" }),
    ).toMatchObject({
      statusCode: 403,
    });
  });
});

describe("API keys", () => {
  it("creates a key with scopes, shows its value once, and the key works against the partner API until deleted", async () => {
    const tenantId = await createTenant(h.app);
    const { browser, user } = await signedIn(h.app, tenantId, "admin");
    await browser.get("/console/settings/api-keys");
    const created = await browser.post("/console/settings/api-keys", {
      name: "onboarding",
      scopes: ["cases:read", "tags:read"],
    });
    expect(created.statusCode).toBe(201);
    expect(created.headers["cache-control"]).toBe("no-store");
    const key = /<code id="new-key">([^<]+)<\/code>/.exec(created.body)?.[1] as string;
    expect(key).toMatch(/^cds_test_/);
    expect((await h.app.inject({ url: "/cases", headers: { "x-api-key": key } })).statusCode).toBe(200);
    expect(
      (await h.app.inject({ method: "POST", url: "/cases", headers: { "x-api-key": key }, payload: {} }))
        .statusCode,
    ).toBe(403);
    const later = await browser.get("/console/settings/api-keys");
    expect(later.body).toContain("onboarding");
    expect(later.body).not.toContain(key);
    const keyId = /\/console\/settings\/api-keys\/([^/]+)\/delete/.exec(later.body)?.[1] as string;
    expect((await browser.post(`/console/settings/api-keys/${keyId}/delete`)).statusCode).toBe(303);
    expect((await h.app.inject({ url: "/cases", headers: { "x-api-key": key } })).statusCode).toBe(401);
    const audit = await browser.get("/console/audit");
    expect(audit.body).toContain("Created an API key");
    expect(audit.body).toContain("Deleted an API key");
    expect(audit.body).not.toContain(key);
    const rows = await h.ctx.db.root
      .selectFrom("console_audit")
      .select(["actor", "action"])
      .where("tenant_id", "=", tenantId)
      .execute();
    expect(rows).toEqual(
      expect.arrayContaining([
        { actor: `analyst:${user.userId}`, action: "apikey.create" },
        { actor: `analyst:${user.userId}`, action: "apikey.delete" },
      ]),
    );
  });

  it("refuses a key without scopes with 400, and another tenant's key is 404", async () => {
    const tenantId = await createTenant(h.app);
    const { browser } = await signedIn(h.app, tenantId, "admin");
    await browser.get("/console/settings/api-keys");
    expect((await browser.post("/console/settings/api-keys", { name: "none" })).statusCode).toBe(400);
    const other = await createPartner(h.app);
    expect((await browser.post(`/console/settings/api-keys/${other.keyId}/delete`)).statusCode).toBe(404);
    expect((await h.app.inject({ url: "/cases", headers: other.headers })).statusCode).toBe(200);
  });
});

describe("the tag vocabulary", () => {
  it("adds, disables and enables a tag, as the operator API then reads it", async () => {
    const tenantId = await createTenant(h.app);
    const { browser } = await signedIn(h.app, tenantId, "admin");
    await browser.get("/console/settings/tags");
    expect((await browser.post("/console/settings/tags", { tag: "vip", enabled: "true" })).statusCode).toBe(
      303,
    );
    const read = async () =>
      (await h.app.inject({ url: `/admin/tenants/${tenantId}/tag-options`, headers: adminHeaders })).json()
        .tagOptions;
    expect(await read()).toEqual([expect.objectContaining({ tag: "vip", enabled: true })]);
    expect((await browser.post("/console/settings/tags", { tag: "vip", enabled: "false" })).statusCode).toBe(
      303,
    );
    expect(await read()).toEqual([expect.objectContaining({ tag: "vip", enabled: false })]);
    expect((await browser.post("/console/settings/tags", { tag: "x".repeat(65) })).statusCode).toBe(400);
  });
});

describe("webhooks", () => {
  it("saves an endpoint, sends a test event to it, shows it in the log and redelivers it", async () => {
    const tenantId = await createTenant(h.app);
    const { browser } = await signedIn(h.app, tenantId, "admin");
    await browser.get("/console/settings/webhooks");
    const saved = await browser.post("/console/settings/webhooks", {
      webhookKey: "default",
      url: receiver.url("/hooks/settings"),
      secretId: "s1",
      secret: "a-signing-secret-of-32-characters",
      maxAttempts: "3",
      timeoutMs: "5000",
    });
    expect(saved.statusCode, saved.body).toBe(303);
    expect((await browser.post("/console/settings/webhooks/default/test")).statusCode).toBe(303);
    const [first] = await receiver.waitFor(1, { path: "/hooks/settings" });
    if (!first) throw new Error("no test event arrived");
    expect(first.json()).toMatchObject({
      event_type: "webhook.test",
      tenant_id: tenantId,
      webhook_key: "default",
    });
    expect(first.headers["x-service-secret-id"]).toBe("s1");
    let log = await browser.get("/console/settings/webhooks");
    for (let i = 0; i < 100 && !log.body.includes("badge-green"); i++) {
      await new Promise((r) => setTimeout(r, 50));
      log = await browser.get("/console/settings/webhooks");
    }
    expect(log.body).toContain("webhook.test");
    const deliveryId = /\/settings\/webhooks\/deliveries\/([0-9a-f-]{36})\/redeliver/.exec(
      log.body,
    )?.[1] as string;
    expect(
      (await browser.post(`/console/settings/webhooks/deliveries/${deliveryId}/redeliver`)).statusCode,
    ).toBe(303);
    const [, second] = await receiver.waitFor(2, { path: "/hooks/settings" });
    expect(second?.json()).toMatchObject({ event_type: "webhook.test" });
    expect(second?.json().webhookId).not.toBe(first.json().webhookId);

    const stranger = await signedIn(h.app, await createTenant(h.app, "Other"), "admin");
    await stranger.browser.get("/console/settings/webhooks");
    expect(
      (await stranger.browser.post(`/console/settings/webhooks/deliveries/${deliveryId}/redeliver`))
        .statusCode,
    ).toBe(404);
    expect((await stranger.browser.post("/console/settings/webhooks/default/test")).statusCode).toBe(404);
    expect(
      (
        await browser.post("/console/settings/webhooks", {
          webhookKey: "x",
          url: "ftp://nope",
          secretId: "s1",
          secret: "short",
        })
      ).statusCode,
    ).toBe(400);
    expect((await browser.post("/console/settings/webhooks/default/delete")).statusCode).toBe(303);
    expect((await browser.get("/console/settings/webhooks")).body).toContain("No endpoint is configured");
  });
});

describe("users", () => {
  it("an admin adds a user (the setup link shown once), changes their role and deletes them", async () => {
    const tenantId = await createTenant(h.app);
    const { browser } = await signedIn(h.app, tenantId, "admin");
    await browser.get("/console/settings/users");
    const created = await browser.post("/console/settings/users", {
      name: "Rita Analyst",
      email: "rita@example.com",
      role: "analyst",
    });
    expect(created.statusCode).toBe(201);
    const setupUrl = /<code id="setup-link">([^<]+)<\/code>/
      .exec(created.body)?.[1]
      ?.replaceAll("&amp;", "&") as string;
    expect(setupUrl).toContain("/console/setup?token=");
    const listed = (
      await h.app.inject({ url: `/admin/tenants/${tenantId}/users`, headers: adminHeaders })
    ).json().users;
    const rita = listed.find((u: { email: string }) => u.email === "rita@example.com");
    expect(rita).toMatchObject({ role: "analyst", status: "invited" });
    expect(
      (await browser.post(`/console/settings/users/${rita.userId}/role`, { role: "viewer" })).statusCode,
    ).toBe(303);
    expect((await browser.post(`/console/settings/users/${rita.userId}/delete`)).statusCode).toBe(303);
    const after = (
      await h.app.inject({ url: `/admin/tenants/${tenantId}/users`, headers: adminHeaders })
    ).json().users;
    expect(after.map((u: { email: string }) => u.email)).not.toContain("rita@example.com");
    const audit = await browser.get("/console/audit");
    expect(audit.body).toContain("Created a user");
    expect(audit.body).toMatch(/Changed a user(&#39;|')s role/);
    expect(audit.body).toContain("Deleted a user");
  });

  it("an admin cannot change or delete themselves, nor touch another tenant's user", async () => {
    const tenantId = await createTenant(h.app);
    const { browser, user } = await signedIn(h.app, tenantId, "admin");
    await browser.get("/console/settings/users");
    expect((await browser.post(`/console/settings/users/${user.userId}/delete`)).statusCode).toBe(409);
    const other = await signedIn(h.app, await createTenant(h.app, "Other"), "viewer");
    expect((await browser.post(`/console/settings/users/${other.user.userId}/delete`)).statusCode).toBe(404);
    expect(
      (await browser.post(`/console/settings/users/${other.user.userId}/role`, { role: "admin" })).statusCode,
    ).toBe(404);
    expect((await other.browser.get("/console/")).headers.location).toBe("/console/queue");
  });
});

describe("providers", () => {
  it("lists the tenant's configured providers without their credentials, and no other tenant's", async () => {
    const tenantId = await createTenant(h.app);
    const otherTenant = await createTenant(h.app);
    const { browser } = await signedIn(h.app, tenantId, "admin");
    expect((await browser.get("/console/settings/providers")).body).toContain("No provider is configured");
    const configure = (t: string, baseUrl: string) =>
      h.app.inject({
        method: "PUT",
        url: `/admin/tenants/${t}/providers/opensanctions`,
        headers: adminHeaders,
        payload: { baseUrl, credentials: { apiKey: "opensanctions-api-key-value-0001" } },
      });
    expect((await configure(tenantId, "https://screening.example/")).statusCode).toBe(200);
    expect((await configure(otherTenant, "https://other-tenant.example/")).statusCode).toBe(200);
    const page = await browser.get("/console/settings/providers");
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("opensanctions");
    expect(page.body).toContain("https://screening.example");
    expect(page.body).not.toContain("other-tenant.example");
    expect(page.body).not.toContain("opensanctions-api-key-value-0001");
  });
});
