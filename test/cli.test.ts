import fs from "node:fs";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../src/main.js";
import { ADMIN_TOKEN, createTestApp, type TestApp } from "./support/app.js";
import { createStoredCase } from "./support/fixtures.js";

let h: TestApp;
let baseUrl: string;
const dirs: string[] = [];

beforeAll(async () => {
  h = await createTestApp();
  await h.app.listen({ port: 0, host: "127.0.0.1" });
  baseUrl = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await h.close();
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

function emptyDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cds-cli-"));
  dirs.push(dir);
  return dir;
}

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed as the JSON the command printed. */
  // biome-ignore lint/suspicious/noExplicitAny: tests read the printed JSON field by field
  json(): any;
}

async function cds(argv: string[], env: Record<string, string | undefined> = {}): Promise<Outcome> {
  let stdout = "";
  let stderr = "";
  const code = await runCli(argv, {
    env: { CDS_URL: baseUrl, CDS_ADMIN_TOKEN: ADMIN_TOKEN, CDS_DATA_DIR: emptyDir(), ...env },
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
  });
  return { code, stdout, stderr, json: () => JSON.parse(stdout) };
}

async function newTenant(name = "Acme Bank"): Promise<string> {
  const created = await cds(["tenant", "create", "--name", name]);
  expect(created.code, created.stderr).toBe(0);
  return created.json().tenantId;
}

describe("cds tenant", () => {
  it("creates a tenant and prints it, then lists it", async () => {
    const created = await cds(["tenant", "create", "--name", "Northwind Payments"]);
    expect(created.code).toBe(0);
    const tenant = created.json();
    expect(tenant).toEqual({
      tenantId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: "Northwind Payments",
      createdAt: expect.any(String),
    });
    const listed = await cds(["tenant", "list"]);
    expect(listed.code).toBe(0);
    expect(listed.json().tenants).toContainEqual(tenant);
  });
});

describe("cds key", () => {
  it("creates a key, printing its value once with a note that it is shown this once", async () => {
    const tenantId = await newTenant();
    const created = await cds([
      "key",
      "create",
      "--tenant",
      tenantId,
      "--scopes",
      "tags:read, tags:write",
      "--name",
      "ci",
    ]);
    expect(created.code).toBe(0);
    const key = created.json();
    expect(key).toMatchObject({
      name: "ci",
      scopes: ["tags:read", "tags:write"],
      rateLimit: { perSecond: 1000, burst: 2000 },
    });
    expect(key.key).toMatch(/^cds_test_/);
    expect(created.stdout.split(key.key)).toHaveLength(2);
    expect(created.stderr).toContain("shown this once");
    expect(created.stderr).not.toContain(key.key);

    // The printed key works.
    const caseId = await createStoredCase(h.ctx, tenantId);
    const res = await h.app.inject({ url: `/cases/${caseId}/tags`, headers: { "x-api-key": key.key } });
    expect(res.statusCode).toBe(200);
  });

  it("sets a rate limit, or none, and refuses a malformed one", async () => {
    const tenantId = await newTenant();
    const limited = await cds([
      "key",
      "create",
      "--tenant",
      tenantId,
      "--scopes",
      "tags:read",
      "--rate-limit",
      "5:10",
    ]);
    expect(limited.json().rateLimit).toEqual({ perSecond: 5, burst: 10 });
    const burstDefault = await cds([
      "key",
      "create",
      "--tenant",
      tenantId,
      "--scopes",
      "tags:read",
      "--rate-limit",
      "50",
    ]);
    expect(burstDefault.json().rateLimit).toEqual({ perSecond: 50, burst: 100 });
    const unlimited = await cds([
      "key",
      "create",
      "--tenant",
      tenantId,
      "--scopes",
      "tags:read",
      "--rate-limit",
      "unlimited",
    ]);
    expect(unlimited.json().rateLimit).toBeNull();
    const expiring = await cds([
      "key",
      "create",
      "--tenant",
      tenantId,
      "--scopes",
      "tags:read",
      "--expires-at",
      "2999-01-01T00:00:00Z",
    ]);
    expect(expiring.json().expiresAt).toBe("2999-01-01T00:00:00.000Z");
    const malformed = await cds([
      "key",
      "create",
      "--tenant",
      tenantId,
      "--scopes",
      "tags:read",
      "--rate-limit",
      "fast",
    ]);
    expect(malformed.code).toBe(1);
    expect(malformed.stderr).toContain(
      `option '--rate-limit <limit>' argument 'fast' is invalid. expected <perSecond>[:<burst>] or "unlimited", got "fast"`,
    );
    expect(malformed.stdout).toBe("");
  });

  it("lists keys without their values, and deletes one", async () => {
    const tenantId = await newTenant();
    const first = (
      await cds(["key", "create", "--tenant", tenantId, "--scopes", "tags:read", "--name", "one"])
    ).json();
    const second = (
      await cds(["key", "create", "--tenant", tenantId, "--scopes", "tags:write", "--name", "two"])
    ).json();
    const listed = await cds(["key", "list", "--tenant", tenantId]);
    expect(listed.code).toBe(0);
    expect(listed.json().apiKeys.map((k: { keyId: string; name: string }) => [k.keyId, k.name])).toEqual([
      [first.keyId, "one"],
      [second.keyId, "two"],
    ]);
    expect(listed.stdout).not.toContain(first.key);
    expect(listed.stdout).not.toContain(second.key);
    expect(listed.stdout).not.toContain('"key"');

    const deleted = await cds(["key", "delete", "--tenant", tenantId, "--key", first.keyId]);
    expect(deleted.code).toBe(0);
    expect(deleted.stderr).toContain(`deleted ${first.keyId}`);
    const after = (await cds(["key", "list", "--tenant", tenantId])).json();
    expect(after.apiKeys.map((k: { keyId: string }) => k.keyId)).toEqual([second.keyId]);
    const caseId = await createStoredCase(h.ctx, tenantId);
    const res = await h.app.inject({ url: `/cases/${caseId}/tags`, headers: { "x-api-key": first.key } });
    expect(res.statusCode).toBe(401);
  });
});

describe("cds tag-option", () => {
  it("adds, disables and lists a tenant's tag options", async () => {
    const tenantId = await newTenant();
    const vip = await cds(["tag-option", "set", "--tenant", tenantId, "--tag", "vip"]);
    expect(vip.code).toBe(0);
    expect(vip.json()).toMatchObject({ tag: "vip", enabled: true });
    expect((await cds(["tag-option", "set", "--tenant", tenantId, "--tag", "fraud ring"])).code).toBe(0);
    const disabled = await cds(["tag-option", "set", "--tenant", tenantId, "--tag", "vip", "--disabled"]);
    expect(disabled.json()).toMatchObject({ tag: "vip", enabled: false });
    const listed = await cds(["tag-option", "list", "--tenant", tenantId]);
    expect(
      listed.json().tagOptions.map((o: { tag: string; enabled: boolean }) => [o.tag, o.enabled]),
    ).toEqual([
      ["fraud ring", true],
      ["vip", false],
    ]);
  });
});

describe("errors", () => {
  it("prints the API's error with its details and exits 1", async () => {
    const unknown = await cds([
      "key",
      "create",
      "--tenant",
      "00000000-0000-4000-8000-000000000000",
      "--scopes",
      "tags:read",
    ]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe("error: HTTP 404: tenant not found\n");
    expect(unknown.stdout).toBe("");

    const tenantId = await newTenant();
    const invalid = await cds([
      "key",
      "create",
      "--tenant",
      tenantId,
      "--scopes",
      "tags:read,cases:everything",
    ]);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/^error: HTTP 400: invalid request: scopes\[1\] must be one of: /);
    expect(invalid.stderr).toContain("  --scopes[1]: must be one of: cases:write,");

    const endpoint = await cds([
      "webhook",
      "set",
      "--tenant",
      tenantId,
      "--endpoint",
      "ftp://example.com/hook",
      "--secret",
      "s1=a-signing-secret-of-enough-length",
    ]);
    expect(endpoint.code).toBe(1);
    expect(endpoint.stderr).toMatch(/\n {2}--endpoint: /);
  });

  it("refuses a value the API would refuse in the flag's own terms, before any request", async () => {
    const res = await cds(["case", "override", "--case", "c", "--decision", "approve", "--actor", "jane"]);
    expect(res.code).toBe(1);
    expect(res.stderr).toBe(
      "error: option '--decision <value>' argument 'approve' is invalid. Allowed choices are approved, declined, in_review.\n",
    );
  });

  it("prints its version, and marks required options in --help", async () => {
    const version = await cds(["--version"]);
    expect(version.code).toBe(0);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    const help = await cds(["tag-option", "set", "--help"]);
    expect(help.stdout).toMatch(/--tenant <tenantId>\s+the tenant \(required\)/);
    expect(help.stdout).toMatch(/--disabled\s+disable the option: no new uses, existing tags stay\n/);
  });

  it("says clearly when it has no operator token", async () => {
    const res = await cds(["tenant", "list"], { CDS_ADMIN_TOKEN: undefined });
    expect(res.code).toBe(1);
    expect(res.stderr).toBe(
      "error: no operator token: pass --token, set CDS_ADMIN_TOKEN, or run where CDS_DATA_DIR holds the embedded token\n",
    );
  });

  it("answers 401 through the CLI with a wrong token, and works with --token or the token kept in CDS_DATA_DIR", async () => {
    const wrong = await cds(["tenant", "list"], { CDS_ADMIN_TOKEN: "not-the-operator-token" });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/^error: HTTP 401: missing or invalid operator token/);
    const flag = await cds(["--token", ADMIN_TOKEN, "tenant", "list"], {
      CDS_ADMIN_TOKEN: "not-the-operator-token",
    });
    expect(flag.code).toBe(0);
    const dataDir = emptyDir();
    fs.writeFileSync(path.join(dataDir, "admin-token"), `${ADMIN_TOKEN}\n`);
    const stored = await cds(["tenant", "list"], { CDS_ADMIN_TOKEN: undefined, CDS_DATA_DIR: dataDir });
    expect(stored.code, stored.stderr).toBe(0);
  });

  it("says clearly when the service cannot be reached", async () => {
    const res = await cds(["--url", "http://127.0.0.1:9", "tenant", "list"]);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(
      /^error: cannot reach the service at http:\/\/127\.0\.0\.1:9 \(.+\); is it running\?\n$/,
    );
  });

  it("reports a missing option or an unknown command and exits non-zero", async () => {
    const missing = await cds(["key", "create", "--scopes", "tags:read"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("required option '--tenant <tenantId>' not specified");
    const unknown = await cds(["tenant", "explode"]);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/unknown command 'explode'/);
  });
});
