import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openSecrets } from "../src/modules/webhooks/webhook-secrets.js";
import type { AppContext } from "../src/platform/context.js";
import { createLogger } from "../src/platform/logger.js";
import { secretBoxOf } from "../src/platform/secret-box.js";
import { startWorker } from "../src/worker.js";
import { buildCheckedApp, createTestApp, type TestApp } from "./support/app.js";
import { adminHeaders, createStoredCase, createTenant } from "./support/fixtures.js";
import { configureWebhook, emitDecided, Receiver, TEST_WEBHOOK_SECRET } from "./support/receiver.js";

let h: TestApp;
beforeAll(async () => {
  h = await createTestApp();
});
afterAll(async () => {
  await h.close();
});

function put(tenantId: string, key: string, payload: unknown, app = h.app) {
  return app.inject({
    method: "PUT",
    url: `/admin/tenants/${tenantId}/webhooks/${key}`,
    headers: adminHeaders,
    payload: payload as object,
  });
}

const valid = {
  url: "https://hooks.example.com/cds?token=abc",
  secrets: [{ id: "2025-01", secret: TEST_WEBHOOK_SECRET }],
  activeSecretId: "2025-01",
};

describe("PUT /admin/tenants/{t}/webhooks/{webhookKey}", () => {
  it("stores a configuration with defaults and answers without secret values", async () => {
    const tenantId = await createTenant(h.app);
    const res = await put(tenantId, "default", valid);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      webhookKey: "default",
      url: valid.url,
      secrets: [{ id: "2025-01" }],
      activeSecretId: "2025-01",
      maxAttempts: 5,
      timeoutMs: 10_000,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(res.body).not.toContain(TEST_WEBHOOK_SECRET);
  });

  it("replaces a configuration, keeping a secret named by id alone", async () => {
    const tenantId = await createTenant(h.app);
    const first = (await put(tenantId, "alerts", valid)).json();
    const res = await put(tenantId, "alerts", {
      url: "https://hooks.example.com/v2",
      secrets: [{ id: "2025-01" }, { id: "2025-06", secret: "whsec_next_secret_value_0001" }],
      activeSecretId: "2025-06",
      maxAttempts: 8,
      timeoutMs: 2500,
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      webhookKey: "alerts",
      url: "https://hooks.example.com/v2",
      secrets: [{ id: "2025-01" }, { id: "2025-06" }],
      activeSecretId: "2025-06",
      maxAttempts: 8,
      timeoutMs: 2500,
      createdAt: first.createdAt,
    });
    const stored = await h.ctx.db.root
      .selectFrom("webhook_configs")
      .select(["secrets", "secrets_sealed"])
      .where("tenant_id", "=", tenantId)
      .where("webhook_key", "=", "alerts")
      .executeTakeFirstOrThrow();
    // Stored sealed (AES-256-GCM), never in clear; they open to the values sent.
    expect(stored.secrets_sealed).toBe(true);
    expect(JSON.stringify(stored.secrets)).not.toContain(TEST_WEBHOOK_SECRET);
    expect(JSON.stringify(stored.secrets)).not.toContain("whsec_next_secret_value_0001");
    expect(openSecrets(secretBoxOf(h.ctx.config), tenantId, "alerts", stored.secrets, true)).toEqual([
      { id: "2025-01", secret: TEST_WEBHOOK_SECRET },
      { id: "2025-06", secret: "whsec_next_secret_value_0001" },
    ]);
  });

  it("answers 400 naming every field that is wrong", async () => {
    const tenantId = await createTenant(h.app);
    const cases: Array<[unknown, string, RegExp]> = [
      [{ ...valid, url: "not a url" }, "url", /valid absolute URL/],
      [{ ...valid, url: "ftp://hooks.example.com/x" }, "url", /http or https/],
      [{ ...valid, url: "https://user:pw@hooks.example.com/x" }, "url", /credentials/],
      [{ ...valid, url: `https://hooks.example.com/${"x".repeat(2100)}` }, "url", /2048/],
      [{ ...valid, secrets: [] }, "secrets", /must NOT have fewer than 1 items/],
      [
        { ...valid, secrets: [{ id: "a", secret: "short" }], activeSecretId: "a" },
        "secrets[0].secret",
        /16 to 512/,
      ],
      [
        {
          ...valid,
          secrets: [
            { id: "a", secret: TEST_WEBHOOK_SECRET },
            { id: "a", secret: TEST_WEBHOOK_SECRET },
          ],
          activeSecretId: "a",
        },
        "secrets[1].id",
        /repeats/,
      ],
      [
        {
          ...valid,
          secrets: [{ secret: TEST_WEBHOOK_SECRET }, { id: "b", secret: TEST_WEBHOOK_SECRET }],
          activeSecretId: "b",
        },
        "secrets[0].id",
        /more than one secret/,
      ],
      [
        { ...valid, secrets: [{ id: "bad id!", secret: TEST_WEBHOOK_SECRET }], activeSecretId: "bad id!" },
        "secrets[0].id",
        /letters/,
      ],
      [
        { ...valid, secrets: [{ id: "never-stored" }], activeSecretId: "never-stored" },
        "secrets[0].secret",
        /no secret is stored/,
      ],
      [{ ...valid, activeSecretId: undefined }, "activeSecretId", /required/],
      [{ ...valid, activeSecretId: "other" }, "activeSecretId", /not the id/],
      [
        { ...valid, secrets: [{ secret: TEST_WEBHOOK_SECRET }], activeSecretId: "x" },
        "activeSecretId",
        /no id/,
      ],
      [{ ...valid, maxAttempts: 0 }, "maxAttempts", /must be >= 1/],
      [{ ...valid, maxAttempts: 21 }, "maxAttempts", /must be <= 20/],
      [{ ...valid, timeoutMs: 50 }, "timeoutMs", /must be >= 100/],
      [{ ...valid, timeoutMs: 30_001 }, "timeoutMs", /must be <= 30000/],
      [{ ...valid, retries: 3 }, "retries", /not a known property/],
      [{ secrets: valid.secrets, activeSecretId: "2025-01" }, "url", /required/],
    ];
    for (const [payload, path, message] of cases) {
      const res = await put(tenantId, "default", payload);
      expect(res.statusCode, JSON.stringify(payload).slice(0, 200)).toBe(400);
      const detail = res.json().details.find((d: { path: string }) => d.path === path);
      expect(detail, `${path} in ${res.body}`).toBeDefined();
      expect(detail.message).toMatch(message);
    }
    const badKey = await put(tenantId, "no%20spaces", valid);
    expect(badKey.statusCode).toBe(400);
    expect(badKey.json().details).toEqual([{ path: "webhookKey", message: expect.any(String) }]);
    const listed = await h.app.inject({
      method: "GET",
      url: `/admin/tenants/${tenantId}/webhooks`,
      headers: adminHeaders,
    });
    expect(listed.json().webhooks).toEqual([]);
  });

  it("answers 404 for an unknown or malformed tenant", async () => {
    for (const id of ["00000000-0000-4000-8000-000000000000", "not-a-tenant"]) {
      const res = await put(id, "default", valid);
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ error: "tenant not found", code: "not_found" });
    }
  });
});

describe("GET and DELETE /admin/tenants/{t}/webhooks", () => {
  it("lists a tenant's configurations by key and never shows a secret", async () => {
    const tenantId = await createTenant(h.app);
    await put(tenantId, "default", valid);
    await put(tenantId, "callbacks", { ...valid, url: "https://hooks.example.com/callbacks" });
    await put(await createTenant(h.app, "Other Bank"), "default", valid);
    const res = await h.app.inject({
      method: "GET",
      url: `/admin/tenants/${tenantId}/webhooks`,
      headers: adminHeaders,
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().webhooks.map((w: { webhookKey: string }) => w.webhookKey)).toEqual([
      "callbacks",
      "default",
    ]);
    expect(res.body).not.toContain(TEST_WEBHOOK_SECRET);
    const one = await h.app.inject({
      method: "GET",
      url: `/admin/tenants/${tenantId}/webhooks/callbacks`,
      headers: adminHeaders,
    });
    expect(one.json()).toMatchObject({ webhookKey: "callbacks", secrets: [{ id: "2025-01" }] });
    expect(one.body).not.toContain(TEST_WEBHOOK_SECRET);
  });

  it("deletes a configuration: 204, then 404", async () => {
    const tenantId = await createTenant(h.app);
    await put(tenantId, "callbacks", valid);
    const url = `/admin/tenants/${tenantId}/webhooks/callbacks`;
    expect((await h.app.inject({ method: "DELETE", url, headers: adminHeaders })).statusCode).toBe(204);
    expect((await h.app.inject({ method: "GET", url, headers: adminHeaders })).statusCode).toBe(404);
    expect((await h.app.inject({ method: "DELETE", url, headers: adminHeaders })).statusCode).toBe(404);
  });
});

describe("operator authentication", () => {
  it("answers 401 on every webhook route without the operator token or with a wrong one", async () => {
    const tenantId = await createTenant(h.app);
    const deliveryId = "00000000-0000-4000-8000-000000000000";
    const routes: Array<{ method: "GET" | "PUT" | "DELETE" | "POST"; url: string; payload?: object }> = [
      { method: "PUT", url: `/admin/tenants/${tenantId}/webhooks/default`, payload: valid },
      { method: "GET", url: `/admin/tenants/${tenantId}/webhooks` },
      { method: "GET", url: `/admin/tenants/${tenantId}/webhooks/default` },
      { method: "DELETE", url: `/admin/tenants/${tenantId}/webhooks/default` },
      { method: "GET", url: `/admin/tenants/${tenantId}/webhook-deliveries` },
      { method: "GET", url: `/admin/webhook-deliveries/${deliveryId}` },
      { method: "POST", url: `/admin/webhook-deliveries/${deliveryId}/redeliver` },
      {
        method: "POST",
        url: `/admin/tenants/${tenantId}/webhook-deliveries/redeliver-failed`,
        payload: { since: "2025-01-01T00:00:00Z" },
      },
    ];
    for (const route of routes) {
      for (const headers of [
        {},
        { authorization: "Bearer wrong-token-wrong-token" },
        { authorization: "Basic x" },
      ]) {
        const res = await h.app.inject({ ...route, headers });
        expect(res.statusCode, `${route.method} ${route.url}`).toBe(401);
      }
    }
  });
});

describe("target safety with CDS_ALLOW_PRIVATE_TARGETS off", () => {
  let strict: TestApp;
  beforeAll(async () => {
    strict = await createTestApp({ allowPrivateTargets: false, env: "production" });
  });
  afterAll(async () => {
    await strict.close();
  });

  it("refuses URLs that resolve to private, loopback, link-local, CGNAT, unique-local or metadata addresses", async () => {
    const tenantId = await createTenant(strict.app);
    const refused = [
      "https://127.0.0.1/hook",
      "https://localhost:8443/hook",
      "https://[::1]/hook",
      "https://10.1.2.3/hook",
      "https://172.20.0.5/hook",
      "https://192.168.1.10/hook",
      "https://169.254.169.254/latest/meta-data",
      "https://100.100.100.200/hook",
      "https://[fd00:ec2::254]/hook",
      "https://[fe80::1]/hook",
      "https://[::ffff:127.0.0.1]/hook",
      "https://0.0.0.0/hook",
    ];
    for (const url of refused) {
      const res = await put(tenantId, "default", { ...valid, url }, strict.app);
      expect(res.statusCode, url).toBe(400);
      expect(res.json().details).toEqual([
        { path: "url", message: expect.stringMatching(/non-public address/) },
      ]);
    }
    const unresolvable = await put(
      tenantId,
      "default",
      { ...valid, url: "https://no-such-host.invalid/" },
      strict.app,
    );
    expect(unresolvable.statusCode).toBe(400);
    expect(unresolvable.json().details[0].message).toMatch(/does not resolve/);
  });

  it("accepts a public https address and refuses plain http in production", async () => {
    const tenantId = await createTenant(strict.app);
    const ok = await put(tenantId, "default", { ...valid, url: "https://93.184.215.14/hook" }, strict.app);
    expect(ok.statusCode).toBe(200);
    const plain = await put(tenantId, "default", { ...valid, url: "http://93.184.215.14/hook" }, strict.app);
    expect(plain.statusCode).toBe(400);
    expect(plain.json().details[0]).toEqual({
      path: "url",
      message: "must be an https URL in production",
    });
  });

  it("refuses at delivery time a target that has come to resolve to a private address", async () => {
    const receiver = await Receiver.start();
    try {
      const tenantId = await createTenant(strict.app);
      const caseId = await createStoredCase(strict.ctx, tenantId);
      // What DNS rebinding looks like from here: a configuration accepted earlier now points inside.
      await strict.ctx.db.root
        .insertInto("webhook_configs")
        .values({
          tenant_id: tenantId,
          webhook_key: "default",
          url: receiver.url("/inside"),
          secrets: JSON.stringify([{ id: "s1", secret: TEST_WEBHOOK_SECRET }]),
          active_secret_id: "s1",
          max_attempts: 1,
          timeout_ms: 2000,
        })
        .execute();
      await strict.startWorker();
      await emitDecided(strict.ctx.db, tenantId, caseId);
      let delivery: { status: string; attempts: Array<{ error: string }> } | undefined;
      for (let i = 0; i < 200 && delivery?.status !== "failed"; i++) {
        const res = await strict.app.inject({
          method: "GET",
          url: `/admin/tenants/${tenantId}/webhook-deliveries`,
          headers: adminHeaders,
        });
        delivery = res.json().deliveries[0];
        await new Promise((r) => setTimeout(r, 25));
      }
      expect(delivery?.status).toBe("failed");
      expect(delivery?.attempts[0]?.error).toMatch(/127\.0\.0\.1.*non-public address/);
      expect(receiver.requests).toHaveLength(0);
    } finally {
      await receiver.close();
    }
  });
});

describe("logs", () => {
  it("never carry a webhook secret, from configuration to failed deliveries", async () => {
    let logged = "";
    const sink = new Writable({
      write(chunk, _encoding, done) {
        logged += chunk.toString();
        done();
      },
    });
    const ctx: AppContext = { ...h.ctx, log: createLogger("trace", sink) };
    const app = await buildCheckedApp(ctx);
    const receiver = await Receiver.start();
    const worker = await startWorker(ctx);
    try {
      receiver.on("/fails", { status: 500, body: "nope" });
      const tenantId = await createTenant(app);
      const caseId = await createStoredCase(ctx, tenantId);
      await configureWebhook(app, adminHeaders, tenantId, { url: receiver.url("/fails"), maxAttempts: 2 });
      await emitDecided(ctx.db, tenantId, caseId);
      await receiver.waitFor(2);
      for (let i = 0; i < 100 && !logged.includes("failed for good"); i++)
        await new Promise((r) => setTimeout(r, 20));
      expect(logged).toContain("webhook configuration stored");
      expect(logged).toContain("webhook attempt failed; will retry");
      expect(logged).toContain("webhook delivery failed for good");
      expect(logged).not.toContain(TEST_WEBHOOK_SECRET);
    } finally {
      await worker.stop();
      await app.close();
      await receiver.close();
    }
  });
});
