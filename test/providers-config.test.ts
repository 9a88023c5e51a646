import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../src/app.js";
import type { AppContext } from "../src/platform/context.js";
import { createLogger } from "../src/platform/logger.js";
import { secretBoxOf } from "../src/platform/secret-box.js";
import { createTestApp, type TestApp, testConfig } from "./support/app.js";
import { runCds } from "./support/cli.js";
import { adminHeaders, createTenant } from "./support/fixtures.js";

let h: TestApp;
let url: string;
beforeAll(async () => {
  h = await createTestApp();
  url = await h.app.listen({ port: 0, host: "127.0.0.1" });
});
afterAll(async () => {
  await h.close();
});

const SUMSUB = {
  baseUrl: "https://api.sumsub.example/",
  credentials: { appToken: "sbx:app-token-value-0001", secretKey: "sumsub-secret-key-value-0001" },
  webhookSecret: "sumsub-webhook-secret-0001",
};

function put(tenantId: string, brokerId: string, payload: unknown, headers = adminHeaders) {
  return h.app.inject({
    method: "PUT",
    url: `/admin/tenants/${tenantId}/providers/${brokerId}`,
    headers,
    payload: payload as object,
  });
}

const cds = (...argv: string[]) => runCds(url, ...argv);

describe("provider configuration (operator API)", () => {
  it("stores a configuration and answers with its inbound webhook URL, never the credentials", async () => {
    const tenantId = await createTenant(h.app);
    const res = await put(tenantId, "sumsub", SUMSUB);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toEqual({
      brokerId: "sumsub",
      baseUrl: "https://api.sumsub.example",
      inboundWebhookUrl: expect.stringMatching(
        new RegExp(`^${h.ctx.config.publicUrl}/providers/sumsub/webhooks/[A-Za-z0-9]{32}$`),
      ),
      webhookSecretSet: true,
      timeoutMs: 10000,
      configuredAt: expect.any(String),
    });
    for (const secret of [...Object.values(SUMSUB.credentials), SUMSUB.webhookSecret]) {
      expect(res.body).not.toContain(secret);
    }
    const list = await h.app.inject({
      method: "GET",
      url: `/admin/tenants/${tenantId}/providers`,
      headers: adminHeaders,
    });
    expect(list.json()).toEqual({ providers: [body] });
    const one = await h.app.inject({
      method: "GET",
      url: `/admin/tenants/${tenantId}/providers/sumsub`,
      headers: adminHeaders,
    });
    expect(one.json()).toEqual(body);

    // Stored sealed: the database holds no credential in clear.
    const row = await h.ctx.db.root
      .selectFrom("provider_configs")
      .selectAll()
      .where("tenant_id", "=", tenantId)
      .executeTakeFirstOrThrow();
    const stored = JSON.stringify(row);
    for (const secret of [...Object.values(SUMSUB.credentials), SUMSUB.webhookSecret]) {
      expect(stored).not.toContain(secret);
    }
    const box = secretBoxOf(h.ctx.config);
    expect(JSON.parse(box.open(row.credentials_sealed, `provider-credentials:${tenantId}:sumsub`))).toEqual(
      SUMSUB.credentials,
    );
  });

  it("keeps the inbound URL and the webhook secret when credentials are rotated", async () => {
    const tenantId = await createTenant(h.app);
    const first = (await put(tenantId, "sumsub", SUMSUB)).json();
    const rotated = await put(tenantId, "sumsub", {
      baseUrl: SUMSUB.baseUrl,
      credentials: { appToken: "sbx:app-token-value-0002", secretKey: "sumsub-secret-key-value-0002" },
    });
    expect(rotated.statusCode).toBe(200);
    expect(rotated.json().inboundWebhookUrl).toBe(first.inboundWebhookUrl);
    expect(rotated.json().webhookSecretSet).toBe(true);
  });

  it("answers 400 naming every problem", async () => {
    const tenantId = await createTenant(h.app);
    const res = await put(tenantId, "sumsub", {
      baseUrl: "ftp://x",
      credentials: { appToken: "a", extra: 1 },
    });
    expect(res.statusCode).toBe(400);
    const paths = res.json().details.map((d: { path: string }) => d.path);
    expect(paths).toEqual(
      expect.arrayContaining(["baseUrl", "credentials.secretKey", "credentials.extra", "webhookSecret"]),
    );
    const os = await put(tenantId, "opensanctions", {
      baseUrl: "https://api.opensanctions.org",
      credentials: { apiKey: "k" },
      webhookSecret: "not-used-at-all",
    });
    expect(os.statusCode).toBe(400);
    expect(os.json().details).toEqual([
      { path: "webhookSecret", message: "is not used by opensanctions, which sends no webhooks" },
    ]);
  });

  it("answers 404 for an unknown broker, tenant or configuration, and 401 without the operator token", async () => {
    const tenantId = await createTenant(h.app);
    expect((await put(tenantId, "acme-kyc", SUMSUB)).statusCode).toBe(404);
    expect((await put("00000000-0000-4000-8000-000000000000", "sumsub", SUMSUB)).statusCode).toBe(404);
    const missing = await h.app.inject({
      method: "DELETE",
      url: `/admin/tenants/${tenantId}/providers/sumsub`,
      headers: adminHeaders,
    });
    expect(missing.statusCode).toBe(404);
    expect((await put(tenantId, "sumsub", SUMSUB, {} as typeof adminHeaders)).statusCode).toBe(401);
    expect(
      (await put(tenantId, "sumsub", SUMSUB, { authorization: "Bearer wrong-token-000000" })).statusCode,
    ).toBe(401);
  });

  it("refuses in production a base URL that resolves to a private address", async () => {
    const ctx: AppContext = {
      ...h.ctx,
      config: testConfig({
        env: "production",
        allowPrivateTargets: false,
        secretKey: h.ctx.config.secretKey,
      }),
    };
    const strict = await buildApp(ctx);
    try {
      const tenantId = await createTenant(strict);
      const res = await strict.inject({
        method: "PUT",
        url: `/admin/tenants/${tenantId}/providers/opensanctions`,
        headers: adminHeaders,
        payload: { baseUrl: "https://127.0.0.1:9443", credentials: { apiKey: "k" } },
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().details[0].path).toBe("baseUrl");
    } finally {
      await strict.close();
    }
  });

  it("never logs credentials", async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const ctx: AppContext = { ...h.ctx, log: createLogger("trace", sink) };
    const logged = await buildApp(ctx);
    try {
      const tenantId = await createTenant(logged);
      await logged.inject({
        method: "PUT",
        url: `/admin/tenants/${tenantId}/providers/sumsub`,
        headers: adminHeaders,
        payload: SUMSUB,
      });
      await logged.inject({
        method: "PUT",
        url: `/admin/tenants/${tenantId}/providers/sumsub`,
        headers: adminHeaders,
        payload: { ...SUMSUB, credentials: { appToken: SUMSUB.credentials.appToken } },
      });
      const all = lines.join("");
      expect(all).toContain("provider configuration stored");
      for (const secret of [...Object.values(SUMSUB.credentials), SUMSUB.webhookSecret]) {
        expect(all).not.toContain(secret);
      }
    } finally {
      await logged.close();
    }
  });
});

describe("cds provider", () => {
  it("sets, lists and deletes a configuration", async () => {
    const tenantId = await createTenant(h.app);
    const set = await cds(
      "provider",
      "set",
      "--tenant",
      tenantId,
      "--broker",
      "opensanctions",
      "--base-url",
      "https://api.opensanctions.org",
      "--credential",
      "apiKey=os-api-key-value",
    );
    expect(set.code).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({ brokerId: "opensanctions", webhookSecretSet: false });
    expect(set.stdout).not.toContain("os-api-key-value");
    const list = await cds("provider", "list", "--tenant", tenantId);
    expect(JSON.parse(list.stdout).providers.map((p: { brokerId: string }) => p.brokerId)).toEqual([
      "opensanctions",
    ]);
    const del = await cds("provider", "delete", "--tenant", tenantId, "--broker", "opensanctions");
    expect(del.code).toBe(0);
    expect(JSON.parse((await cds("provider", "list", "--tenant", tenantId)).stdout)).toEqual({
      providers: [],
    });
    const bad = await cds(
      "provider",
      "set",
      "--tenant",
      tenantId,
      "--broker",
      "sumsub",
      "--base-url",
      "x",
      "--credential",
      "appToken=a",
    );
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/credentials.secretKey/);
  });
});
