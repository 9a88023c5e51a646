import { createHash } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEY_PREFIX } from "../src/modules/auth/api-key-format.js";
import type { App } from "../src/platform/app-types.js";
import { type Db, openDb } from "../src/platform/db/index.js";
import { buildCheckedApp, createTestApp, type TestApp } from "./support/app.js";
import {
  adminHeaders,
  createKey,
  createPartner,
  createStoredCase,
  createTenant,
  type Partner,
} from "./support/fixtures.js";

let h: TestApp;
const extraApps: App[] = [];
const extraDbs: Db[] = [];

beforeAll(async () => {
  h = await createTestApp();
});

afterAll(async () => {
  for (const app of extraApps) await app.close();
  for (const db of extraDbs) await db.close();
  await h.close();
});

/** Another app over the same database: on PostgreSQL with a Db of its own, as another process has. */
async function anotherApp(configOverrides: Partial<TestApp["ctx"]["config"]> = {}): Promise<App> {
  let db = h.ctx.db;
  if (h.database.url) {
    db = await openDb({ databaseUrl: h.database.url, poolSize: 2 });
    extraDbs.push(db);
  }
  const app = await buildCheckedApp({
    ...h.ctx,
    db,
    config: Object.freeze({ ...h.ctx.config, ...configOverrides }),
  });
  await app.ready();
  extraApps.push(app);
  return app;
}

/** A request that needs only tags:read, on a case of the partner's; `.url` is its path. */
async function partnerRequest(partner: Partner, app: App = h.app, key = partner.key) {
  const caseId = await createStoredCase(h.ctx, partner.tenantId);
  const url = `/cases/${caseId}/tags`;
  return Object.assign(() => app.inject({ method: "GET", url, headers: { "x-api-key": key } }), { url });
}

function createKeyRequest(
  tenantId: string,
  payload: unknown,
  headers: Record<string, string> = adminHeaders,
) {
  return h.app.inject({
    method: "POST",
    url: `/admin/tenants/${tenantId}/api-keys`,
    headers,
    payload: payload as Record<string, unknown>,
  });
}

async function listKeys(tenantId: string) {
  const res = await h.app.inject({
    method: "GET",
    url: `/admin/tenants/${tenantId}/api-keys`,
    headers: adminHeaders,
  });
  expect(res.statusCode).toBe(200);
  return res.json().apiKeys as Array<Record<string, unknown>>;
}

describe("key values", () => {
  it("are cds_test_ keys in staging with 33 random characters and a checksum", async () => {
    const partner = await createPartner(h.app);
    expect(partner.key).toMatch(/^cds_test_[0-9A-Za-z]{39}$/);
    const another = await createKey(h.app, partner.tenantId);
    expect(another.key.slice(9, 42)).not.toBe(partner.key.slice(9, 42));
    expect((await (await partnerRequest(partner))()).statusCode).toBe(200);
  });

  it("are cds_live_ keys in production, refused by staging and the other way round", async () => {
    const production = await anotherApp({ env: "production" });
    const tenantId = await createTenant(h.app);
    const live = await production.inject({
      method: "POST",
      url: `/admin/tenants/${tenantId}/api-keys`,
      headers: adminHeaders,
      payload: { name: "live", scopes: ["tags:read"] },
    });
    expect(live.statusCode).toBe(201);
    const liveKey = live.json().key as string;
    expect(liveKey.startsWith(KEY_PREFIX.production)).toBe(true);
    const testKey = (await createKey(h.app, tenantId, ["tags:read"])).key;
    const caseId = await createStoredCase(h.ctx, tenantId);
    const url = `/cases/${caseId}/tags`;

    expect((await production.inject({ url, headers: { "x-api-key": liveKey } })).statusCode).toBe(200);
    const stagingWithLive = await h.app.inject({ url, headers: { "x-api-key": liveKey } });
    expect(stagingWithLive.statusCode).toBe(401);
    expect(stagingWithLive.json()).toEqual({
      error: "API key is not for the staging environment",
      code: "unauthenticated",
    });
    const productionWithTest = await production.inject({ url, headers: { "x-api-key": testKey } });
    expect(productionWithTest.statusCode).toBe(401);
    expect(productionWithTest.json()).toEqual({
      error: "API key is not for the production environment",
      code: "unauthenticated",
    });
  });

  it("with one character changed fail the checksum and are refused as malformed", async () => {
    const partner = await createPartner(h.app);
    const request = await partnerRequest(partner);
    expect((await request()).statusCode).toBe(200);
    const at = 20;
    const changed = partner.key[at] === "a" ? "b" : "a";
    const typo = `${partner.key.slice(0, at)}${changed}${partner.key.slice(at + 1)}`;
    const res = await h.app.inject({
      method: "GET",
      url: request.url,
      headers: { "x-api-key": typo },
    });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ error: "malformed API key", code: "unauthenticated" });
    const truncated = await h.app.inject({
      method: "GET",
      url: request.url,
      headers: { "x-api-key": partner.key.slice(0, -1) },
    });
    expect(truncated.json()).toEqual({ error: "malformed API key", code: "unauthenticated" });
  });

  it("are stored only as a SHA-256 hash: the value is nowhere in the database", async () => {
    const partner = await createPartner(h.app);
    const secretPart = partner.key.slice(13);
    const row = await h.ctx.db.root
      .selectFrom("api_keys")
      .selectAll()
      .where("id", "=", partner.keyId)
      .executeTakeFirstOrThrow();
    expect(Buffer.from(row.key_hash).equals(createHash("sha256").update(partner.key).digest())).toBe(true);
    expect(row.key_hint).toBe(`${partner.key.slice(0, 13)}…`);
    expect(JSON.stringify(row)).not.toContain(secretPart);

    // Every row of every table, as text: a dump of the data.
    const tables = await sql<{ name: string }>`
      SELECT quote_ident(table_name) AS name FROM information_schema.tables
      WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`.execute(h.ctx.db.root);
    expect(tables.rows.length).toBeGreaterThan(5);
    let dump = "";
    for (const { name } of tables.rows) {
      const rows = await sql<{ row: string }>`SELECT t::text AS row FROM ${sql.raw(name)} t`.execute(
        h.ctx.db.root,
      );
      dump += rows.rows.map((r) => r.row).join("\n");
    }
    expect(dump).toContain(partner.keyId);
    expect(dump).not.toContain(secretPart);
    expect(dump).not.toContain(createHash("sha256").update(partner.key).digest("base64"));
  });

  it("are shown once: the list shows keyId, name, scopes and a hint, never the value", async () => {
    const tenantId = await createTenant(h.app);
    const created = await createKeyRequest(tenantId, {
      name: "  integration  ",
      scopes: ["tags:read", "tags:read"],
    });
    expect(created.statusCode).toBe(201);
    const body = created.json();
    expect(body).toMatchObject({
      name: "integration",
      scopes: ["tags:read"],
      lastUsedAt: null,
      expiresAt: null,
    });
    expect(body.keyId).toMatch(/^key_[0-9A-Za-z]{20}$/);
    expect(new Date(body.createdAt).toISOString()).toBe(body.createdAt);
    const listed = await listKeys(tenantId);
    expect(listed).toHaveLength(1);
    expect(listed[0]).not.toHaveProperty("key");
    expect(listed[0]).toMatchObject({
      keyId: body.keyId,
      name: "integration",
      keyHint: `${body.key.slice(0, 13)}…`,
    });
    expect(JSON.stringify(listed)).not.toContain(body.key.slice(13));
  });
});

describe("authentication", () => {
  it("records lastUsedAt when a key is used", async () => {
    const partner = await createPartner(h.app);
    expect((await listKeys(partner.tenantId))[0]?.lastUsedAt).toBeNull();
    const before = Date.now();
    expect((await (await partnerRequest(partner))()).statusCode).toBe(200);
    let lastUsedAt: unknown = null;
    for (let i = 0; i < 100 && lastUsedAt === null; i++) {
      lastUsedAt = (await listKeys(partner.tenantId))[0]?.lastUsedAt;
      if (lastUsedAt === null) await delay(20);
    }
    expect(typeof lastUsedAt).toBe("string");
    expect(new Date(lastUsedAt as string).getTime()).toBeGreaterThanOrEqual(before - 1000);
  });

  it("refuses a key once its expiresAt has passed", async () => {
    const tenantId = await createTenant(h.app);
    const expiresAt = new Date(Date.now() + 1500);
    const partner = await createKey(h.app, tenantId, ["tags:read"], { expiresAt: expiresAt.toISOString() });
    expect((await listKeys(tenantId))[0]?.expiresAt).toBe(expiresAt.toISOString());
    const request = await partnerRequest(partner);
    expect((await request()).statusCode).toBe(200);
    await delay(Math.max(0, expiresAt.getTime() - Date.now() + 10));
    const res = await request();
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ error: "API key has expired", code: "unauthenticated" });
  });

  it("answers 401 naming the problem for a missing, unknown or empty key", async () => {
    const partner = await createPartner(h.app);
    const { url } = await partnerRequest(partner);
    const missing = await h.app.inject({ url });
    expect(missing.statusCode).toBe(401);
    expect(missing.json().error).toMatch(/X-API-Key/);
    const unknown = await h.app.inject({
      url,
      headers: { "x-api-key": `${partner.key.slice(0, 9)}${"A".repeat(33)}${partner.key.slice(-6)}` },
    });
    expect(unknown.statusCode).toBe(401);
    const empty = await h.app.inject({ url, headers: { "x-api-key": "" } });
    expect(empty.statusCode).toBe(401);
  });

  it("stops a deleted key on the very next request, on every process", async () => {
    const other = await anotherApp();
    const partner = await createPartner(h.app);
    const here = await partnerRequest(partner, h.app);
    const there = await partnerRequest(partner, other);
    expect((await here()).statusCode).toBe(200);
    expect((await there()).statusCode).toBe(200);

    const deleted = await h.app.inject({
      method: "DELETE",
      url: `/admin/tenants/${partner.tenantId}/api-keys/${partner.keyId}`,
      headers: adminHeaders,
    });
    expect(deleted.statusCode).toBe(204);
    expect(deleted.body).toBe("");
    const next = await there();
    expect(next.statusCode).toBe(401);
    expect(next.json()).toEqual({ error: "unknown API key", code: "unauthenticated" });
    expect((await here()).statusCode).toBe(401);
    expect(await listKeys(partner.tenantId)).toEqual([]);
  });

  it("answers 429 with Retry-After past a key's rate limit, for that key only", async () => {
    const tenantId = await createTenant(h.app);
    const limited = await createKey(h.app, tenantId, ["tags:read"], {
      rateLimit: { perSecond: 1, burst: 2 },
    });
    const neighbour = await createKey(h.app, tenantId, ["tags:read"]);
    const request = await partnerRequest(limited);
    const answers = [await request(), await request(), await request()];
    expect(answers.map((r) => r.statusCode)).toEqual([200, 200, 429]);
    const refused = answers[2]!;
    expect(refused.json()).toEqual({ error: "rate limit exceeded for this API key", code: "rate_limited" });
    expect(Number(refused.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(refused.headers["x-request-id"]).toBeTruthy();
    expect(answers.map((r) => r.headers.ratelimit)).toEqual([
      "limit=2, remaining=1, reset=1",
      "limit=2, remaining=0, reset=2",
      "limit=2, remaining=0, reset=2",
    ]);
    const neighbours = await partnerRequest(neighbour, h.app, neighbour.key);
    expect((await neighbours()).statusCode).toBe(200);
    // A token comes back after a second.
    await delay(1050);
    expect((await request()).statusCode).toBe(200);
  });

  it("gives a key the default limit of 1,000/s with a burst of 2,000, and no limit with rateLimit null", async () => {
    const tenantId = await createTenant(h.app);
    await createKey(h.app, tenantId, ["tags:read"]);
    const unlimited = await createKey(h.app, tenantId, ["tags:read"], { rateLimit: null });
    const keys = await listKeys(tenantId);
    expect(keys.map((k) => k.rateLimit)).toEqual([{ perSecond: 1000, burst: 2000 }, null]);
    const request = await partnerRequest(unlimited);
    const answers = await Promise.all(Array.from({ length: 60 }, () => request()));
    expect(answers.every((r) => r.statusCode === 200)).toBe(true);
    expect(answers.some((r) => "ratelimit" in r.headers)).toBe(false);
  });

  it("passes a key's own tenant and scopes to the route: a key without the scope is 403", async () => {
    const tenantId = await createTenant(h.app);
    const writer = await createKey(h.app, tenantId, ["tags:write"]);
    const res = await (await partnerRequest(writer))();
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual({ error: "API key lacks the tags:read scope", code: "forbidden" });
  });
});

describe("operator API for keys", () => {
  it("answers 401 without the operator token or with a wrong one", async () => {
    const partner = await createPartner(h.app);
    const routes = [
      { method: "POST" as const, url: "/admin/tenants", payload: { name: "x" } },
      { method: "GET" as const, url: "/admin/tenants" },
      {
        method: "POST" as const,
        url: `/admin/tenants/${partner.tenantId}/api-keys`,
        payload: { name: "x", scopes: ["tags:read"] },
      },
      { method: "GET" as const, url: `/admin/tenants/${partner.tenantId}/api-keys` },
      { method: "DELETE" as const, url: `/admin/tenants/${partner.tenantId}/api-keys/${partner.keyId}` },
      {
        method: "PUT" as const,
        url: `/admin/tenants/${partner.tenantId}/tag-options/vip`,
        payload: { enabled: true },
      },
      { method: "GET" as const, url: `/admin/tenants/${partner.tenantId}/tag-options` },
    ];
    const token = adminHeaders.authorization.slice("Bearer ".length);
    const wrong = [
      {},
      { authorization: "Bearer wrong-token-0123456789" },
      { authorization: `Bearer ${token}x` },
      { authorization: `Bearer ${token.slice(0, -1)}` },
      { authorization: token },
      { authorization: `Basic ${Buffer.from(`admin:${token}`).toString("base64")}` },
      { "x-api-key": partner.key },
    ];
    for (const route of routes) {
      for (const headers of wrong) {
        const res = await h.app.inject({ ...route, headers });
        expect(res.statusCode, `${route.method} ${route.url} ${JSON.stringify(headers)}`).toBe(401);
        expect(res.json().error).toMatch(/operator token/);
      }
    }
    const lowercase = await h.app.inject({
      url: `/admin/tenants/${partner.tenantId}/api-keys`,
      headers: { authorization: `bearer ${token}` },
    });
    expect(lowercase.statusCode).toBe(200);
    // Nothing happened: the key still works.
    expect((await (await partnerRequest(partner))()).statusCode).toBe(200);
  });

  it("answers 400 naming each bad field", async () => {
    const tenantId = await createTenant(h.app);
    const cases: Array<[unknown, string, RegExp]> = [
      [{ scopes: ["tags:read"] }, "name", /^is required$/],
      [{ name: "", scopes: ["tags:read"] }, "name", /fewer than 1 characters/],
      [{ name: "   ", scopes: ["tags:read"] }, "name", /1 to 200 characters/],
      [{ name: "k" }, "scopes", /^is required$/],
      [{ name: "k", scopes: [] }, "scopes", /fewer than 1 items/],
      [{ name: "k", scopes: ["cases:admin"] }, "scopes[0]", /^must be one of: cases:write, .*tags:write$/],
      [{ name: "k", scopes: ["tags:read"], expiresAt: "tomorrow" }, "expiresAt", /format "date-time"/],
      [{ name: "k", scopes: ["tags:read"], expiresAt: "2001-01-01T00:00:00Z" }, "expiresAt", /in the future/],
      [
        { name: "k", scopes: ["tags:read"], rateLimit: { perSecond: 0, burst: 1 } },
        "rateLimit.perSecond",
        />= 1/,
      ],
      [
        { name: "k", scopes: ["tags:read"], rateLimit: { perSecond: 5, burst: 0 } },
        "rateLimit.burst",
        />= 1/,
      ],
      [{ name: "k", scopes: ["tags:read"], rateLimit: { perSecond: 5 } }, "rateLimit.burst", /^is required$/],
      [{ name: "k", scopes: ["tags:read"], rateLimit: "fast" }, "rateLimit", /must be object/],
      [
        { name: "k", scopes: ["tags:read"], rateLimt: { perSecond: 5, burst: 5 } },
        "rateLimt",
        /not a known property/,
      ],
    ];
    for (const [payload, field, message] of cases) {
      const res = await createKeyRequest(tenantId, payload);
      const label = JSON.stringify(payload);
      expect(res.statusCode, label).toBe(400);
      const body = res.json();
      expect(body.error, label).toContain(field);
      // Each problem once, about the field itself: no "must be null" or "anyOf" noise from unions.
      expect(body.details, `${label} → ${res.body}`).toEqual([
        { path: field, message: expect.stringMatching(message) },
      ]);
    }
    expect(await listKeys(tenantId)).toEqual([]);
  });

  it("answers 404 for an unknown tenant, an unknown key, and another tenant's key", async () => {
    const owner = await createPartner(h.app);
    const stranger = await createTenant(h.app, "Other Bank");
    for (const tenantId of ["00000000-0000-4000-8000-000000000000", "not-a-tenant"]) {
      const created = await createKeyRequest(tenantId, { name: "k", scopes: ["tags:read"] });
      expect(created.statusCode).toBe(404);
      expect(created.json()).toEqual({ error: "tenant not found", code: "not_found" });
      const listed = await h.app.inject({
        url: `/admin/tenants/${tenantId}/api-keys`,
        headers: adminHeaders,
      });
      expect(listed.statusCode).toBe(404);
    }
    const unknownKey = await h.app.inject({
      method: "DELETE",
      url: `/admin/tenants/${owner.tenantId}/api-keys/key_doesnotexist`,
      headers: adminHeaders,
    });
    expect(unknownKey.statusCode).toBe(404);
    expect(unknownKey.json()).toEqual({ error: "API key not found", code: "not_found" });
    const othersKey = await h.app.inject({
      method: "DELETE",
      url: `/admin/tenants/${stranger}/api-keys/${owner.keyId}`,
      headers: adminHeaders,
    });
    expect(othersKey.statusCode).toBe(404);
    expect((await (await partnerRequest(owner))()).statusCode).toBe(200);
    const twice = async () =>
      h.app.inject({
        method: "DELETE",
        url: `/admin/tenants/${owner.tenantId}/api-keys/${owner.keyId}`,
        headers: adminHeaders,
      });
    expect((await twice()).statusCode).toBe(204);
    expect((await twice()).statusCode).toBe(404);
  });
});

describe("rate limit bounds", () => {
  it("refuses a fractional, tiny or huge rate limit with 400 naming the field, never a 5xx", async () => {
    const app = await createTestApp();
    try {
      const tenantId = await createTenant(app.app);
      for (const rateLimit of [
        { perSecond: 1.1422031711204148e-92, burst: 182 },
        { perSecond: 0.5, burst: 10 },
        { perSecond: 10, burst: 2 ** 31 },
      ]) {
        const res = await app.app.inject({
          method: "POST",
          url: `/admin/tenants/${tenantId}/api-keys`,
          headers: adminHeaders,
          payload: { name: "limited", scopes: ["cases:read"], rateLimit },
        });
        expect(res.statusCode, JSON.stringify(rateLimit)).toBe(400);
        expect(res.json().code).toBe("invalid_request");
        expect(res.json().details[0].path).toMatch(/^rateLimit\.(perSecond|burst)$/);
      }
    } finally {
      await app.close();
    }
  });
});
