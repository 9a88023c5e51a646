import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serviceMigrations } from "../src/context.js";
import { openDb } from "../src/platform/db/index.js";
import { createLogger } from "../src/platform/logger.js";
import { migrate } from "../src/platform/migrate.js";
import { ADMIN_TOKEN, buildCheckedApp, createTestApp, type TestApp } from "./support/app.js";
import { adminHeaders, createPartner, createStoredCase, enableTags } from "./support/fixtures.js";

let h: TestApp;
beforeAll(async () => {
  h = await createTestApp();
});
afterAll(async () => {
  await h.close();
});

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
type Method = "GET" | "POST" | "PUT" | "DELETE" | "PATCH";

interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, { security?: unknown; description?: string }>>;
  components: { securitySchemes: Record<string, unknown> };
}

async function openApi(): Promise<OpenApiDocument> {
  const res = await h.app.inject({ url: "/openapi.json" });
  expect(res.statusCode).toBe(200);
  return res.json();
}

/** Every operation of the document, with its path parameters filled in. */
function operations(doc: OpenApiDocument) {
  return Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({
      path,
      method: method.toUpperCase() as Method,
      url: path.replace(/\{[^}]+\}/g, "00000000-0000-4000-8000-000000000000"),
      op,
    })),
  );
}

describe("service endpoints", () => {
  it("GET /health answers 200 while the process is up", async () => {
    const res = await h.app.inject({ url: "/health" });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: "ok" });
  });

  it("GET /ready answers 503 when the database does not answer, while /health still answers", async () => {
    const db = h.database.url ? await openDb({ databaseUrl: h.database.url, poolSize: 1 }) : await openDb({});
    if (!h.database.url) await migrate(db, serviceMigrations());
    const app = await buildCheckedApp({ ...h.ctx, db });
    try {
      // The database answers; no worker runs in this test.
      expect((await app.inject({ url: "/ready" })).json().error).toMatch(/^no worker seen/);
      await db.close();
      const down = await app.inject({ url: "/ready" });
      expect(down.statusCode).toBe(503);
      expect(down.json()).toEqual({ error: "database unreachable", code: "unavailable" });
      expect((await app.inject({ url: "/health" })).statusCode).toBe(200);
    } finally {
      await app.close();
    }
  });

  it("answers unknown routes with a JSON 404", async () => {
    const res = await h.app.inject({ method: "POST", url: "/no/such/route?x=1" });
    expect(res.statusCode).toBe(404);
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    expect(res.json()).toEqual({ error: "route POST /no/such/route not found", code: "not_found" });
  });
});

describe("OpenAPI document and docs page", () => {
  it("is an OpenAPI 3.1 document listing the partner and operator paths with their security", async () => {
    const doc = await openApi();
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.components.securitySchemes).toMatchObject({
      apiKey: { type: "apiKey", in: "header", name: "X-API-Key" },
      adminToken: { type: "http", scheme: "bearer" },
    });
    const tags = doc.paths["/cases/{caseId}/tags"];
    expect(Object.keys(tags ?? {}).sort()).toEqual(["delete", "get", "post"]);
    expect(tags?.get?.security).toEqual([{ apiKey: ["tags:read"] }]);
    expect(tags?.get?.description).toContain("Scope: `tags:read`.");
    expect(tags?.post?.description).toContain("Scope: `tags:write`.");
    expect(tags?.delete?.description).toContain("Scope: `tags:write`.");
    for (const path of [
      "/admin/tenants",
      "/admin/tenants/{tenantId}/api-keys",
      "/admin/tenants/{tenantId}/api-keys/{keyId}",
      "/admin/tenants/{tenantId}/tag-options",
      "/admin/tenants/{tenantId}/tag-options/{tag}",
    ]) {
      expect(doc.paths[path], path).toBeDefined();
    }
    for (const { path, method, op } of operations(doc)) {
      if (path.startsWith("/admin/")) expect(op.security, `${method} ${path}`).toEqual([{ adminToken: [] }]);
      const scope = (op.security as Array<{ apiKey?: string[] }> | undefined)?.[0]?.apiKey?.[0];
      if (scope) expect(op.description, `${method} ${path}`).toContain(`Scope: \`${scope}\`.`);
    }
    expect(doc.paths["/health"]?.get?.security).toEqual([]);
    expect(doc.paths["/openapi.json"]).toBeUndefined();
  });

  it("serves /docs entirely from this app: every script and stylesheet is local", async () => {
    const page = await h.app.inject({ url: "/docs" });
    expect(page.statusCode).toBe(200);
    expect(page.headers["content-type"]).toMatch(/^text\/html/);
    const references = [...page.body.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((m) => m[1] as string);
    expect(references.filter((r) => r.endsWith(".js")).length).toBeGreaterThanOrEqual(2);
    expect(references.filter((r) => r.endsWith(".css")).length).toBeGreaterThanOrEqual(1);
    for (const ref of references) {
      expect(ref, ref).toMatch(/^\/docs\//);
      const asset = await h.app.inject({ url: ref });
      expect(asset.statusCode, ref).toBe(200);
      if (ref.endsWith(".css")) expect(asset.body).not.toMatch(/url\(\s*['"]?(https?:)?\/\//);
    }
    const initializer = await h.app.inject({ url: "/docs/static/swagger-initializer.js" });
    expect(initializer.body).toContain("resolveUrl('./json')");
    expect(initializer.body).toMatch(/"validatorUrl":null/);
    const spec = await h.app.inject({ url: "/docs/json" });
    expect(spec.json().openapi).toBe("3.1.0");
  });
});

describe("requests", () => {
  it("carry X-Request-Id on every response, echoing a caller's well-formed one", async () => {
    const partner = await createPartner(h.app);
    const caseId = await createStoredCase(h.ctx, partner.tenantId);
    const answers = {
      ok: await h.app.inject({ url: "/health" }),
      unauthorized: await h.app.inject({ url: `/cases/${caseId}/tags` }),
      notFound: await h.app.inject({ url: "/nowhere" }),
      tooLarge: await h.app.inject({
        method: "POST",
        url: `/cases/${caseId}/tags`,
        headers: { ...partner.headers, "content-type": "application/json" },
        payload: JSON.stringify({ tag: "x".repeat(1024 * 1024) }),
      }),
      malformed: await h.app.inject({
        method: "POST",
        url: "/admin/tenants",
        headers: { ...adminHeaders, "content-type": "application/json" },
        payload: "{",
      }),
    };
    expect(Object.values(answers).map((r) => r.statusCode)).toEqual([200, 401, 404, 413, 400]);
    for (const [name, res] of Object.entries(answers))
      expect(res.headers["x-request-id"], name).toMatch(UUID);
    expect(new Set(Object.values(answers).map((r) => r.headers["x-request-id"])).size).toBe(5);

    const echoed = await h.app.inject({
      url: "/nowhere",
      headers: { "x-request-id": "partner-trace:42.a_b-c" },
    });
    expect(echoed.headers["x-request-id"]).toBe("partner-trace:42.a_b-c");
    for (const bad of ["has spaces in it", "x".repeat(129), "new\u00e9line"]) {
      const res = await h.app.inject({ url: "/health", headers: { "x-request-id": bad } });
      expect(res.headers["x-request-id"], bad).toMatch(UUID);
    }
  });

  it("answers 413 to a JSON body over 1 MiB and accepts one of exactly 1 MiB", async () => {
    const tenantBody = (size: number) => {
      const shell = JSON.stringify({ name: "" });
      return JSON.stringify({ name: "n".repeat(size - shell.length) });
    };
    const over = await h.app.inject({
      method: "POST",
      url: "/admin/tenants",
      headers: { ...adminHeaders, "content-type": "application/json" },
      payload: tenantBody(1024 * 1024 + 1),
    });
    expect(over.statusCode).toBe(413);
    expect(over.json()).toEqual({ error: "request body is larger than 1 MiB", code: "payload_too_large" });
    const exact = await h.app.inject({
      method: "POST",
      url: "/admin/tenants",
      headers: { ...adminHeaders, "content-type": "application/json" },
      payload: tenantBody(1024 * 1024),
    });
    // Through the size check, to the name's own limit.
    expect(exact.statusCode).toBe(400);
    expect(exact.json().details).toEqual([
      { path: "name", message: "must NOT have more than 200 characters" },
    ]);
  });

  it("answers 400 {error} to a malformed JSON body, and to an empty one where a body is required", async () => {
    for (const [payload, expected] of [
      ['{"name": "Acme"', { error: "request body is not valid JSON", code: "invalid_request" }],
      ["not json", { error: "request body is not valid JSON", code: "invalid_request" }],
      [
        "",
        {
          error: "invalid request: the body must be object",
          code: "invalid_request",
          details: [{ path: "", message: "must be object" }],
        },
      ],
    ] as const) {
      const res = await h.app.inject({
        method: "POST",
        url: "/admin/tenants",
        headers: { ...adminHeaders, "content-type": "application/json" },
        payload,
      });
      expect(res.statusCode, payload).toBe(400);
      expect(res.json()).toEqual(expected);
    }
  });

  it("answer 401 on every operator route without the operator token or with a wrong one", async () => {
    const admin = operations(await openApi()).filter((o) => o.path.startsWith("/admin/"));
    expect(admin.length).toBeGreaterThanOrEqual(7);
    for (const { method, url } of admin) {
      for (const headers of [{}, { authorization: "Bearer not-the-operator-token" }]) {
        const res = await h.app.inject({ method, url, headers, payload: method === "GET" ? undefined : {} });
        expect(res.statusCode, `${method} ${url}`).toBe(401);
      }
    }
  });

  it("answer 401 on every partner route without an API key", async () => {
    const partner = operations(await openApi()).filter((o) =>
      (o.op.security as Array<Record<string, unknown>> | undefined)?.some((s) => "apiKey" in s),
    );
    expect(partner.map((o) => `${o.method} ${o.path}`)).toEqual(
      expect.arrayContaining([
        "GET /cases/{caseId}/tags",
        "POST /cases/{caseId}/tags",
        "DELETE /cases/{caseId}/tags",
      ]),
    );
    for (const { method, url } of partner) {
      const res = await h.app.inject({ method, url, payload: method === "GET" ? undefined : {} });
      expect(res.statusCode, `${method} ${url}`).toBe(401);
    }
  });
});

describe("logs", () => {
  it("never contain API key values, the operator token or webhook secrets, even at trace level", async () => {
    const lines: string[] = [];
    const log = createLogger("trace", { write: (line: string) => lines.push(line) });
    const app = await buildCheckedApp({
      ...h.ctx,
      log,
      config: Object.freeze({ ...h.ctx.config, logLevel: "trace" }),
    });
    await app.ready();
    try {
      const partner = await createPartner(app);
      await enableTags(app, partner.tenantId, "vip");
      const caseId = await createStoredCase(h.ctx, partner.tenantId);
      const secret = "whsec-the-partners-signing-secret-0123456789";
      const calls = [
        { method: "GET" as const, url: `/cases/${caseId}/tags`, headers: partner.headers },
        {
          method: "POST" as const,
          url: `/cases/${caseId}/tags`,
          headers: partner.headers,
          payload: { tag: "vip" },
        },
        { method: "GET" as const, url: `/cases/${caseId}/tags`, headers: { "x-api-key": `${partner.key}x` } },
        { method: "GET" as const, url: `/cases/${caseId}/tags?key=${partner.key}`, headers: partner.headers },
        {
          method: "GET" as const,
          url: "/admin/tenants",
          headers: { authorization: `Bearer ${ADMIN_TOKEN}x` },
        },
        {
          method: "PUT" as const,
          url: `/admin/tenants/${partner.tenantId}/webhooks/default`,
          headers: adminHeaders,
          payload: { url: "http://127.0.0.1:9/hook", secrets: [{ id: "s1", secret }], activeSecretId: "s1" },
        },
        {
          method: "PUT" as const,
          url: `/admin/tenants/${partner.tenantId}/webhooks/broken`,
          headers: adminHeaders,
          payload: { url: "not a url", secrets: [{ id: "s1", secret }], activeSecretId: "s2" },
        },
        {
          method: "POST" as const,
          url: `/admin/tenants/${partner.tenantId}/api-keys`,
          headers: adminHeaders,
          payload: { name: "another", scopes: ["tags:read"] },
        },
      ];
      const keys = [partner.key];
      for (const call of calls) {
        const res = await app.inject(call);
        if (call.url.endsWith("/api-keys")) keys.push(res.json().key);
      }
      const output = lines.join("");
      // The log did record these requests...
      expect(output).toContain("incoming request");
      expect(output).toContain(`/cases/${caseId}/tags`);
      // ...and none of the secrets they carried.
      for (const value of [...keys, ADMIN_TOKEN, secret]) {
        expect(output).not.toContain(value);
        expect(output).not.toContain(value.slice(13));
      }
    } finally {
      await app.close();
    }
  });
});
