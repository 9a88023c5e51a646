import fs from "node:fs";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAppContext } from "../src/context.js";
import { runCli } from "../src/main.js";
import { changeRole, SIGNIN_LIMITS } from "../src/modules/users/index.js";
import { openDb } from "../src/platform/db/index.js";
import { createLogger } from "../src/platform/logger.js";
import { ADMIN_TOKEN, buildCheckedApp, createTestApp, type TestApp, testConfig } from "./support/app.js";
import { ConsoleClient, createConsoleUser, signedIn, signIn } from "./support/console.js";
import { adminHeaders, createTenant } from "./support/fixtures.js";

let h: TestApp;

beforeAll(async () => {
  h = await createTestApp();
});

afterAll(async () => {
  await h.close();
});

describe("the operator API of console users", () => {
  it("creates a user with a one-time setupUrl, lists and deletes them", async () => {
    const tenantId = await createTenant(h.app);
    const created = await h.app.inject({
      method: "POST",
      url: `/admin/tenants/${tenantId}/users`,
      headers: adminHeaders,
      payload: { email: "Jane.Doe@Example.com", name: "Jane Doe", role: "analyst" },
    });
    expect(created.statusCode).toBe(201);
    const user = created.json();
    expect(user).toMatchObject({
      email: "jane.doe@example.com",
      name: "Jane Doe",
      role: "analyst",
      status: "invited",
    });
    expect(user.setupUrl).toMatch(/^http.*\/console\/setup\?token=[A-Za-z0-9_-]{43}$/);

    const listed = await h.app.inject({ url: `/admin/tenants/${tenantId}/users`, headers: adminHeaders });
    expect(listed.json().users).toEqual([
      {
        userId: user.userId,
        email: user.email,
        name: "Jane Doe",
        role: "analyst",
        status: "invited",
        createdAt: user.createdAt,
      },
    ]);

    const deleted = await h.app.inject({
      method: "DELETE",
      url: `/admin/tenants/${tenantId}/users/${user.userId}`,
      headers: adminHeaders,
    });
    expect(deleted.statusCode).toBe(204);
    const after = await h.app.inject({ url: `/admin/tenants/${tenantId}/users`, headers: adminHeaders });
    expect(after.json().users).toEqual([]);
  });

  it("refuses a bad role or email with 400, a taken email with 409, an unknown tenant or user with 404", async () => {
    const tenantId = await createTenant(h.app);
    const post = (payload: object, tenant = tenantId) =>
      h.app.inject({ method: "POST", url: `/admin/tenants/${tenant}/users`, headers: adminHeaders, payload });
    expect((await post({ email: "a@example.com", name: "A", role: "owner" })).statusCode).toBe(400);
    expect((await post({ email: "not-an-email", name: "A", role: "admin" })).statusCode).toBe(400);
    expect((await post({ email: "dup@example.com", name: "A", role: "admin" })).statusCode).toBe(201);
    const dup = await post(
      { email: "DUP@example.com", name: "B", role: "viewer" },
      await createTenant(h.app, "Other"),
    );
    expect(dup.statusCode).toBe(409);
    expect(
      (
        await post(
          { email: "x@example.com", name: "A", role: "admin" },
          "00000000-0000-4000-8000-000000000000",
        )
      ).statusCode,
    ).toBe(404);
    const other = await createTenant(h.app, "Other Bank");
    const theirs = await createConsoleUser(h.app, other, "viewer", { setPassword: false });
    const cross = await h.app.inject({
      method: "DELETE",
      url: `/admin/tenants/${tenantId}/users/${theirs.userId}`,
      headers: adminHeaders,
    });
    expect(cross.statusCode).toBe(404);
  });

  it("answers 401 without the operator token or with a wrong one", async () => {
    const tenantId = await createTenant(h.app);
    for (const headers of [{}, { authorization: "Bearer wrong-token-0123456789" }]) {
      const requests = [
        {
          method: "POST" as const,
          url: `/admin/tenants/${tenantId}/users`,
          payload: { email: "a@b.co", name: "A", role: "admin" },
        },
        { method: "GET" as const, url: `/admin/tenants/${tenantId}/users` },
        {
          method: "DELETE" as const,
          url: `/admin/tenants/${tenantId}/users/00000000-0000-4000-8000-000000000000`,
        },
      ];
      for (const r of requests) expect((await h.app.inject({ ...r, headers })).statusCode, r.url).toBe(401);
    }
  });

  it("documents every status of the user routes and hides the console pages from the OpenAPI document", async () => {
    const doc = (await h.app.inject({ url: "/openapi.json" })).json();
    const users = doc.paths["/admin/tenants/{tenantId}/users"];
    expect(Object.keys(users.post.responses).sort()).toEqual(
      expect.arrayContaining(["201", "400", "401", "404", "409"]),
    );
    expect(Object.keys(users.get.responses).sort()).toEqual(expect.arrayContaining(["200", "401", "404"]));
    expect(
      Object.keys(doc.paths["/admin/tenants/{tenantId}/users/{userId}"].delete.responses).sort(),
    ).toEqual(expect.arrayContaining(["204", "401", "404"]));
    expect(Object.keys(doc.paths).filter((p) => p.startsWith("/console"))).toEqual([]);
  });
});

describe("the setup link and the password", () => {
  it("sets a password once; the link then answers 410, and the hash is scrypt", async () => {
    const tenantId = await createTenant(h.app);
    const user = await createConsoleUser(h.app, tenantId, "analyst");
    const url = new URL(user.setupUrl);
    const again = await new ConsoleClient(h.app).get(url.pathname + url.search);
    expect(again.statusCode).toBe(410);
    const row = await h.ctx.db.root
      .selectFrom("console_users")
      .select(["password_hash", "setup_token_hash"])
      .where("id", "=", user.userId)
      .executeTakeFirstOrThrow();
    expect(row.password_hash).toMatch(/^scrypt\$32768\$8\$1\$[A-Za-z0-9_-]+\$[A-Za-z0-9_-]{43}$/);
    expect(row.password_hash).not.toContain(user.password);
    expect(row.setup_token_hash).toBeNull();
  });

  it("refuses a short password and two passwords that differ, and keeps the link usable", async () => {
    const tenantId = await createTenant(h.app);
    const user = await createConsoleUser(h.app, tenantId, "viewer", { setPassword: false });
    const url = new URL(user.setupUrl);
    const token = url.searchParams.get("token") ?? "";
    const browser = new ConsoleClient(h.app);
    await browser.get(url.pathname + url.search);
    const short = await browser.post("/console/setup", { token, password: "short", confirm: "short" });
    expect(short.statusCode).toBe(400);
    expect(short.body).toContain("12 to 256 characters");
    const differ = await browser.post("/console/setup", {
      token,
      password: "a long password 1",
      confirm: "a long password 2",
    });
    expect(differ.statusCode).toBe(400);
    expect(differ.body).toContain("The two passwords differ");
    const ok = await browser.post("/console/setup", {
      token,
      password: "a long password 1",
      confirm: "a long password 1",
    });
    expect(ok.statusCode).toBe(303);
  });

  it("an unknown token is a page saying the link cannot be used", async () => {
    const res = await new ConsoleClient(h.app).get("/console/setup?token=nope");
    expect(res.statusCode).toBe(410);
    expect(res.headers["content-type"]).toMatch(/^text\/html/);
  });
});

describe("sign-in and sessions", () => {
  it("signs in with a session cookie that is HttpOnly, SameSite=Lax and scoped to /console", async () => {
    const tenantId = await createTenant(h.app);
    const user = await createConsoleUser(h.app, tenantId, "analyst");
    const browser = new ConsoleClient(h.app);
    await browser.get("/console/sign-in");
    const res = await browser.post("/console/sign-in", {
      email: user.email.toUpperCase(),
      password: user.password,
      next: "/console/audit",
    });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/console/audit");
    const cookie = (
      res.cookies as Array<{
        name: string;
        httpOnly?: boolean;
        sameSite?: string;
        path?: string;
        secure?: boolean;
      }>
    ).find((c) => c.name === "cds_console");
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Lax", path: "/console" });
    expect(cookie?.secure).toBeFalsy();
    const stored = await h.ctx.db.root
      .selectFrom("console_sessions")
      .select("user_id")
      .where("user_id", "=", user.userId)
      .execute();
    expect(stored).toHaveLength(1);
  });

  it("never follows a next address off the console", async () => {
    const tenantId = await createTenant(h.app);
    const user = await createConsoleUser(h.app, tenantId, "viewer");
    for (const next of ["https://evil.example/", "//evil.example/console/x", "/console//evil.example"]) {
      const browser = new ConsoleClient(h.app);
      await browser.get("/console/sign-in");
      const res = await browser.post("/console/sign-in", {
        email: user.email,
        password: user.password,
        next,
      });
      expect(res.headers.location, next).toBe("/console/queue");
    }
  });

  it("a wrong password or unknown email is 401 with the same message", async () => {
    const tenantId = await createTenant(h.app);
    const user = await createConsoleUser(h.app, tenantId, "viewer");
    const browser = new ConsoleClient(h.app);
    await browser.get("/console/sign-in");
    const wrong = await browser.post("/console/sign-in", { email: user.email, password: "not the password" });
    const unknown = await browser.post("/console/sign-in", {
      email: "nobody@example.com",
      password: "not the password",
    });
    expect(wrong.statusCode).toBe(401);
    expect(unknown.statusCode).toBe(401);
    expect(wrong.body).toContain("the email or password is not right");
    expect(unknown.body).toContain("the email or password is not right");
    expect(browser.cookies.has("cds_console")).toBe(false);
  });

  it(`locks an account after ${SIGNIN_LIMITS.perAccount} failures, even for the right password`, async () => {
    const tenantId = await createTenant(h.app);
    const user = await createConsoleUser(h.app, tenantId, "viewer");
    const browser = new ConsoleClient(h.app);
    await browser.get("/console/sign-in");
    for (let i = 0; i < SIGNIN_LIMITS.perAccount; i++) {
      expect(
        (await browser.post("/console/sign-in", { email: user.email, password: `guess ${i}` })).statusCode,
      ).toBe(401);
    }
    const locked = await browser.post("/console/sign-in", { email: user.email, password: user.password });
    expect(locked.statusCode).toBe(429);
    expect(locked.headers["retry-after"]).toBe(String(SIGNIN_LIMITS.windowMinutes * 60));
  });

  it("counts an attempt before its password is checked: of 40 simultaneous, only the limit are checked", async () => {
    const tenantId = await createTenant(h.app);
    const user = await createConsoleUser(h.app, tenantId, "viewer");
    // On PostgreSQL a second app on connections of its own stands for a second process.
    const second = h.database.url ? await secondApp(h.database.url) : undefined;
    try {
      const apps = second ? [h.app, second.app] : [h.app];
      const browsers = await Promise.all(
        apps.map(async (app) => {
          const browser = new ConsoleClient(app);
          await browser.get("/console/sign-in");
          return browser;
        }),
      );
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          (browsers[i % browsers.length] as ConsoleClient).post("/console/sign-in", {
            email: user.email,
            password: `guess ${i}`,
          }),
        ),
      );
      const statuses = answers.map((r) => r.statusCode);
      // 401: the password was checked and was wrong; 429: refused before any check.
      expect(statuses.filter((s) => s === 401)).toHaveLength(SIGNIN_LIMITS.perAccount);
      expect(statuses.filter((s) => s === 429)).toHaveLength(40 - SIGNIN_LIMITS.perAccount);
      const locked = await browsers[0]?.post("/console/sign-in", {
        email: user.email,
        password: user.password,
      });
      expect(locked?.statusCode).toBe(429);
    } finally {
      await second?.close();
    }
  });

  it(`refuses an address after ${SIGNIN_LIMITS.perAddress} failures across accounts`, async () => {
    const tenantId = await createTenant(h.app);
    const user = await createConsoleUser(h.app, tenantId, "viewer");
    await h.ctx.db.root
      .insertInto("console_signin_failures")
      .values(
        Array.from({ length: SIGNIN_LIMITS.perAddress }, (_, i) => ({
          email: `spray${i}@example.com`,
          address: "127.0.0.1",
        })),
      )
      .execute();
    const browser = new ConsoleClient(h.app);
    await browser.get("/console/sign-in");
    const res = await browser.post("/console/sign-in", { email: user.email, password: user.password });
    expect(res.statusCode).toBe(429);
    await h.ctx.db.root.deleteFrom("console_signin_failures").where("address", "=", "127.0.0.1").execute();
  });

  it("refuses a form post without the CSRF token, or with another browser's, with 403", async () => {
    const tenantId = await createTenant(h.app);
    const user = await createConsoleUser(h.app, tenantId, "viewer");
    const browser = new ConsoleClient(h.app);
    await browser.get("/console/sign-in");
    const none = await browser.post(
      "/console/sign-in",
      { email: user.email, password: user.password },
      { csrf: false },
    );
    expect(none.statusCode).toBe(403);
    const other = new ConsoleClient(h.app);
    await other.get("/console/sign-in");
    const foreign = await browser.post(
      "/console/sign-in",
      { _csrf: other.csrf, email: user.email, password: user.password },
      { csrf: false },
    );
    expect(foreign.statusCode).toBe(403);
    expect(browser.cookies.has("cds_console")).toBe(false);
  });

  it("sign-out ends the session in the database: the old cookie no longer works", async () => {
    const tenantId = await createTenant(h.app);
    const { browser } = await signedIn(h.app, tenantId, "viewer");
    const cookie = browser.cookies.get("cds_console") as string;
    expect((await browser.get("/console/")).headers.location).toBe("/console/queue");
    expect((await browser.post("/console/sign-out")).statusCode).toBe(303);
    const replay = await h.app.inject({ url: "/console/", headers: { cookie: `cds_console=${cookie}` } });
    expect(replay.headers.location).toBe("/console/sign-in");
  });

  it("deleting a user or changing their role ends their sessions at once", async () => {
    const tenantId = await createTenant(h.app);
    const deleted = await signedIn(h.app, tenantId, "analyst");
    const demoted = await signedIn(h.app, tenantId, "admin");
    await h.app.inject({
      method: "DELETE",
      url: `/admin/tenants/${tenantId}/users/${deleted.user.userId}`,
      headers: adminHeaders,
    });
    expect((await deleted.browser.get("/console/")).headers.location).toBe("/console/sign-in");
    await changeRole(h.ctx, tenantId, demoted.user.userId, "viewer", "operator");
    expect((await demoted.browser.get("/console/")).headers.location).toBe("/console/sign-in");
    const again = await signIn(h.app, demoted.user);
    expect((await again.get("/console/")).headers.location).toBe("/console/queue");
  });
});

describe("cds user", () => {
  let baseUrl: string;
  const dirs: string[] = [];
  beforeAll(async () => {
    await h.app.listen({ port: 0, host: "127.0.0.1" });
    baseUrl = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
  });
  afterAll(() => {
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  async function cds(argv: string[]) {
    let stdout = "";
    let stderr = "";
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cds-cli-"));
    dirs.push(dir);
    const code = await runCli(argv, {
      env: { CDS_URL: baseUrl, CDS_ADMIN_TOKEN: ADMIN_TOKEN, CDS_DATA_DIR: dir },
      stdout: (t) => {
        stdout += t;
      },
      stderr: (t) => {
        stderr += t;
      },
    });
    return { code, stdout, stderr };
  }

  it("creates (printing the setup link once), lists and deletes a user", async () => {
    const tenantId = await createTenant(h.app);
    const created = await cds([
      "user",
      "create",
      "--tenant",
      tenantId,
      "--email",
      "ops@example.com",
      "--name",
      "Ops Lead",
      "--role",
      "admin",
    ]);
    expect(created.code, created.stderr).toBe(0);
    const user = JSON.parse(created.stdout);
    expect(user).toMatchObject({
      email: "ops@example.com",
      role: "admin",
      setupUrl: expect.stringContaining("/console/setup?token="),
    });
    expect(created.stderr).toContain("shown this once");
    const listed = await cds(["user", "list", "--tenant", tenantId]);
    expect(JSON.parse(listed.stdout).users.map((u: { userId: string }) => u.userId)).toEqual([user.userId]);
    const deleted = await cds(["user", "delete", "--tenant", tenantId, "--user", user.userId]);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(JSON.parse((await cds(["user", "list", "--tenant", tenantId])).stdout).users).toEqual([]);
    const bad = await cds([
      "user",
      "create",
      "--tenant",
      tenantId,
      "--email",
      "x@example.com",
      "--name",
      "X",
      "--role",
      "owner",
    ]);
    expect(bad.code).not.toBe(0);
  });
});

/** Another app over the same PostgreSQL database, with a pool of its own. */
async function secondApp(url: string) {
  const db = await openDb({ databaseUrl: url, poolSize: 10 });
  const config = testConfig();
  const app = await buildCheckedApp(createAppContext({ config, db, log: createLogger("silent") }));
  await app.ready();
  return {
    app,
    async close() {
      await app.close();
      await db.close();
      fs.rmSync(config.dataDir, { recursive: true, force: true });
    },
  };
}
