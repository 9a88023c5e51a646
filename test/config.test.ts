import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../src/config.js";

const TOKEN = "an-operator-token-of-some-length";
const PG = "postgres://cds@db.internal:5432/cds";
const SECRET_KEY = "0f".repeat(32);

function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error(`no ConfigError for ${JSON.stringify(env)}`);
}

describe("configuration", () => {
  it("has the documented defaults", () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 8080,
      host: "127.0.0.1",
      databaseUrl: undefined,
      dataDir: path.resolve("data"),
      publicUrl: "http://127.0.0.1:8080",
      env: "staging",
      adminToken: undefined,
      allowPrivateTargets: true,
      role: "all",
      logLevel: "info",
      dbPoolSize: 10,
      workerConcurrency: 32,
      jobLeaseSeconds: 30,
      jobPollMs: 1000,
      startLingerMs: 0,
      caseCrashLimit: 3,
      evaluationDeadlineMs: 250,
      evaluationNiceness: 0,
      webhookConcurrency: 128,
      webhookEndpointConcurrency: 16,
      webhookEndpointConcurrencyMax: 64,
      maxEventSkewSeconds: 300,
      uploadTtlSeconds: 3600,
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it("reads every variable it is given", () => {
    const config = loadConfig({
      PORT: "9090",
      HOST: "0.0.0.0",
      DATABASE_URL: `${PG}/`,
      CDS_DATA_DIR: "/var/lib/cds",
      CDS_PUBLIC_URL: "https://cds.example.com/",
      CDS_ENV: "production",
      CDS_ADMIN_TOKEN: TOKEN,
      CDS_SECRET_KEY: SECRET_KEY,
      CDS_ALLOW_PRIVATE_TARGETS: "yes",
      CDS_ROLE: "worker",
      CDS_LOG_LEVEL: "debug",
      CDS_DB_POOL_SIZE: "25",
      CDS_DB_PREPARED_STATEMENTS: "no",
      CDS_WORKER_CONCURRENCY: "4",
      CDS_JOB_LEASE_SECONDS: "60",
      CDS_JOB_POLL_MS: "250",
      CDS_START_LINGER_MS: "25",
      CDS_CASE_CRASH_LIMIT: "5",
      CDS_EVALUATION_DEADLINE_MS: "100",
      CDS_EVALUATION_NICENESS: "5",
      CDS_WEBHOOK_CONCURRENCY: "48",
      CDS_WEBHOOK_ENDPOINT_CONCURRENCY: "8",
      CDS_WEBHOOK_ENDPOINT_CONCURRENCY_MAX: "32",
      CDS_MAX_EVENT_SKEW_SECONDS: "0",
      CDS_UPLOAD_TTL_SECONDS: "600",
    });
    expect(config).toMatchObject({
      port: 9090,
      host: "0.0.0.0",
      databaseUrl: PG,
      dataDir: "/var/lib/cds",
      publicUrl: "https://cds.example.com",
      env: "production",
      adminToken: TOKEN,
      secretKey: SECRET_KEY,
      allowPrivateTargets: true,
      role: "worker",
      logLevel: "debug",
      dbPoolSize: 25,
      dbPreparedStatements: false,
      workerConcurrency: 4,
      jobLeaseSeconds: 60,
      jobPollMs: 250,
      startLingerMs: 25,
      caseCrashLimit: 5,
      evaluationDeadlineMs: 100,
      evaluationNiceness: 5,
      webhookConcurrency: 48,
      webhookEndpointConcurrency: 8,
      webhookEndpointConcurrencyMax: 32,
      maxEventSkewSeconds: 0,
      uploadTtlSeconds: 600,
    });
  });

  it("lets new cases wait for company by default on PostgreSQL only (decision 0031)", () => {
    const server = { DATABASE_URL: `${PG}/`, CDS_ADMIN_TOKEN: TOKEN, CDS_SECRET_KEY: SECRET_KEY };
    expect(loadConfig(server).startLingerMs).toBe(5);
    expect(loadConfig({ ...server, CDS_START_LINGER_MS: "0" }).startLingerMs).toBe(0);
    expect(loadConfig({}).startLingerMs).toBe(0);
  });

  it("derives the public URL from HOST and PORT, reachable even when listening on every address", () => {
    expect(loadConfig({ HOST: "0.0.0.0", PORT: "3000" }).publicUrl).toBe("http://127.0.0.1:3000");
    expect(loadConfig({ HOST: "::" }).publicUrl).toBe("http://127.0.0.1:8080");
    expect(loadConfig({ HOST: "::1" }).publicUrl).toBe("http://[::1]:8080");
    expect(loadConfig({ HOST: "cds.local", PORT: "80" }).publicUrl).toBe("http://cds.local:80");
  });

  it("treats an empty variable as unset", () => {
    expect(loadConfig({ PORT: "", CDS_ENV: "", DATABASE_URL: "" })).toMatchObject({
      port: 8080,
      env: "staging",
      databaseUrl: undefined,
    });
  });

  it("stops with a ConfigError naming the variable for each bad value", () => {
    const bad: Array<[string, string, RegExp]> = [
      ["PORT", "eighty", /expected an integer, got "eighty"/],
      ["PORT", "65536", /from 0 to 65535, got 65536/],
      ["PORT", "-1", /expected an integer/],
      ["PORT", "80.5", /expected an integer/],
      ["DATABASE_URL", "mysql://db/cds", /expected a postgres: or postgresql: URL/],
      ["DATABASE_URL", "not a url", /not a valid URL/],
      ["CDS_PUBLIC_URL", "ftp://files.example.com", /expected a http: or https: URL/],
      ["CDS_PUBLIC_URL", "cds.example.com", /not a valid URL/],
      ["CDS_ENV", "prod", /expected one of production, staging, got "prod"/],
      ["CDS_ADMIN_TOKEN", "short", /at least 16 characters/],
      ["CDS_ALLOW_PRIVATE_TARGETS", "maybe", /expected true or false, got "maybe"/],
      ["CDS_ROLE", "scheduler", /expected one of api, worker, all/],
      ["CDS_LOG_LEVEL", "verbose", /expected one of fatal, error, warn, info, debug, trace, silent/],
      ["CDS_DB_POOL_SIZE", "0", /from 1 to 1000/],
      ["CDS_DB_PREPARED_STATEMENTS", "sometimes", /expected true or false, got "sometimes"/],
      ["CDS_WORKER_CONCURRENCY", "many", /expected an integer/],
      ["CDS_JOB_LEASE_SECONDS", "0", /from 1 to 3600/],
      ["CDS_JOB_POLL_MS", "5", /from 10 to 60000/],
      ["CDS_START_LINGER_MS", "1001", /from 0 to 1000/],
      ["CDS_WEBHOOK_ENDPOINT_CONCURRENCY_MAX", "0", /from 1 to 10000/],
      ["CDS_WEBHOOK_ENDPOINT_CONCURRENCY_MAX", "lots", /expected an integer/],
      ["CDS_MAX_EVENT_SKEW_SECONDS", "86401", /from 0 to 86400/],
      ["CDS_UPLOAD_TTL_SECONDS", "1", /from 10 to 604800/],
    ];
    for (const [variable, value, message] of bad) {
      const err = configError({ [variable]: value });
      expect(err.variable, `${variable}=${value}`).toBe(variable);
      expect(err.message, `${variable}=${value}`).toMatch(new RegExp(`^${variable}: `));
      expect(err.message, `${variable}=${value}`).toMatch(message);
    }
  });

  it("requires CDS_ADMIN_TOKEN with DATABASE_URL", () => {
    const err = configError({ DATABASE_URL: PG });
    expect(err.variable).toBe("CDS_ADMIN_TOKEN");
    expect(err.message).toBe("CDS_ADMIN_TOKEN: is required when DATABASE_URL is set");
    expect(
      loadConfig({ DATABASE_URL: PG, CDS_ADMIN_TOKEN: TOKEN, CDS_SECRET_KEY: SECRET_KEY }).adminToken,
    ).toBe(TOKEN);
    // The embedded mode makes its own token at first start.
    expect(loadConfig({}).adminToken).toBeUndefined();
  });

  it("keeps an endpoint's lane ceiling from its floor to the worker's webhook concurrency", () => {
    const below = configError({ CDS_WEBHOOK_ENDPOINT_CONCURRENCY_MAX: "8" });
    expect(below.variable).toBe("CDS_WEBHOOK_ENDPOINT_CONCURRENCY_MAX");
    expect(below.message).toBe(
      "CDS_WEBHOOK_ENDPOINT_CONCURRENCY_MAX: must be at least CDS_WEBHOOK_ENDPOINT_CONCURRENCY (16), the lane's floor; got 8",
    );
    expect(
      configError({ CDS_WEBHOOK_ENDPOINT_CONCURRENCY: "32", CDS_WEBHOOK_ENDPOINT_CONCURRENCY_MAX: "20" })
        .message,
    ).toMatch(/must be at least CDS_WEBHOOK_ENDPOINT_CONCURRENCY \(32\)/);
    const above = configError({ CDS_WEBHOOK_ENDPOINT_CONCURRENCY_MAX: "200" });
    expect(above.variable).toBe("CDS_WEBHOOK_ENDPOINT_CONCURRENCY_MAX");
    expect(above.message).toMatch(/must be at most CDS_WEBHOOK_CONCURRENCY \(128\).*got 200/);
    // The floor itself is a valid ceiling: lanes of a fixed width, as before.
    expect(loadConfig({ CDS_WEBHOOK_ENDPOINT_CONCURRENCY_MAX: "16" }).webhookEndpointConcurrencyMax).toBe(16);
    expect(loadConfig({ CDS_WEBHOOK_ENDPOINT_CONCURRENCY_MAX: "128" }).webhookEndpointConcurrencyMax).toBe(
      128,
    );
    // Unset, the ceiling is 64, or what the worker has if that is less (never below the floor).
    expect(loadConfig({ CDS_WEBHOOK_CONCURRENCY: "32" }).webhookEndpointConcurrencyMax).toBe(32);
    expect(loadConfig({ CDS_WEBHOOK_CONCURRENCY: "8" }).webhookEndpointConcurrencyMax).toBe(16);
    expect(
      loadConfig({ CDS_WEBHOOK_CONCURRENCY: "8", CDS_WEBHOOK_ENDPOINT_CONCURRENCY: "4" })
        .webhookEndpointConcurrencyMax,
    ).toBe(8);
  });

  it("allows private webhook targets by default in staging and not in production", () => {
    expect(loadConfig({ CDS_ENV: "staging" }).allowPrivateTargets).toBe(true);
    expect(loadConfig({ CDS_ENV: "production" }).allowPrivateTargets).toBe(false);
    expect(loadConfig({ CDS_ENV: "production", CDS_ALLOW_PRIVATE_TARGETS: "true" }).allowPrivateTargets).toBe(
      true,
    );
    expect(loadConfig({ CDS_ENV: "staging", CDS_ALLOW_PRIVATE_TARGETS: "0" }).allowPrivateTargets).toBe(
      false,
    );
  });
});

describe("the README's configuration table", () => {
  it("documents every variable the configuration reads", () => {
    const source = fs.readFileSync(path.resolve(import.meta.dirname, "../src/config.ts"), "utf8");
    const variables = [...source.matchAll(/name: "([A-Z_]+)"/g)].map((m) => m[1] as string);
    expect(variables.length).toBeGreaterThan(10);
    const readme = fs.readFileSync(path.resolve(import.meta.dirname, "../README.md"), "utf8");
    const documented = new Set([...readme.matchAll(/^\| `([A-Z_]+)`/gm)].map((m) => m[1]));
    expect(variables.filter((v) => !documented.has(v))).toEqual([]);
  });
});
