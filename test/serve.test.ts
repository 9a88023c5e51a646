import fs from "node:fs";
import net, { type AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { serviceMigrations } from "../src/context.js";
import { type Child, runTs } from "./support/children/process.js";
import { createServerDatabase, SERVER_URL } from "./support/db.js";

// Each test starts the service as a process of its own, often several times: on a busy machine
// that takes a while, so they get more than the default time.
const PROCESS_TEST_TIMEOUT_MS = 120_000;

const dirs: string[] = [];
const running: Child[] = [];
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const child of running.splice(0)) {
    child.kill("SIGKILL");
    await child.exited;
  }
});

afterAll(async () => {
  for (const cleanup of cleanups) await cleanup();
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

function freshDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cds-serve-"));
  dirs.push(dir);
  return dir;
}

/** `cds <args>` as a process of its own, with exactly these variables set (and nothing inherited). */
function cds(args: string[], env: Record<string, string>): Child {
  const child = runTs("src/main.ts", args, {
    DATABASE_URL: "",
    CDS_ADMIN_TOKEN: "",
    CDS_DATA_DIR: "",
    CDS_LOG_LEVEL: "info",
    PORT: "0",
    ...env,
  });
  running.push(child);
  return child;
}

/** The address the service listens on, from its own log line. */
async function listening(child: Child): Promise<string> {
  const [, url] = await child.line(/"msg":"Server listening at (http:\/\/127\.0\.0\.1:\d+)"/);
  return url as string;
}

async function stop(child: Child): Promise<number | string> {
  child.kill("SIGTERM");
  return child.exited;
}

// About the embedded database only: the PostgreSQL run of the suite leaves it to the embedded one.
describe.skipIf(SERVER_URL)("cds serve on the embedded database", () => {
  it(
    "prints the operator token at the first start only, serves /health and /ready, keeps the token, and holds the directory",
    async () => {
      const dataDir = freshDir();
      const first = cds(["serve"], { CDS_DATA_DIR: dataDir });
      const [, token] = await first.line(/^ {2}(cds_admin_[0-9A-Za-z]{40})$/);
      expect(first.stdout()).toContain("Operator API token (shown once;");
      const url = await listening(first);
      expect((await fetch(`${url}/health`)).status).toBe(200);
      const ready = await fetch(`${url}/ready`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({ status: "ready" });
      const tenants = await fetch(`${url}/admin/tenants`, { headers: { authorization: `Bearer ${token}` } });
      expect(tenants.status).toBe(200);
      expect(fs.readFileSync(path.join(dataDir, "admin-token"), "utf8").trim()).toBe(token);
      expect(fs.statSync(path.join(dataDir, "admin-token")).mode & 0o077).toBe(0);
      expect(await stop(first)).toBe(0);

      const second = cds(["serve"], { CDS_DATA_DIR: dataDir });
      const again = await listening(second);
      expect(second.stdout()).not.toContain("Operator API token");
      expect(second.stdout()).not.toContain(token as string);
      expect(first.stdout().split(token as string)).toHaveLength(2);
      const stillValid = await fetch(`${again}/admin/tenants`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(stillValid.status).toBe(200);

      // A third process on the same directory stops at once, naming the one that holds it.
      const third = cds(["serve"], { CDS_DATA_DIR: dataDir });
      expect(await third.exited).toBe(1);
      expect(third.stderr()).toContain(`already in use by process ${second.pid}`);
      expect(third.stdout()).not.toContain("Server listening");
      expect((await fetch(`${again}/ready`)).status).toBe(200);
      expect(await stop(second)).toBe(0);
      expect(fs.existsSync(path.join(dataDir, "cds.lock"))).toBe(false);

      // A start that fails after opening the database (its port is taken) exits with the reason
      // and releases the directory at once.
      const taken = net.createServer();
      await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
      try {
        const port = (taken.address() as AddressInfo).port;
        const blocked = cds(["serve"], { CDS_DATA_DIR: dataDir, PORT: String(port) });
        expect(await blocked.exited).toBe(1);
        expect(blocked.stderr()).toContain(
          `error: listen EADDRINUSE: address already in use 127.0.0.1:${port}`,
        );
        expect(fs.existsSync(path.join(dataDir, "cds.lock"))).toBe(false);
      } finally {
        await new Promise((resolve) => taken.close(resolve));
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});

describe.runIf(SERVER_URL)("cds serve on PostgreSQL", () => {
  it(
    "serves /health and /ready with the operator token it is given, and prints no token",
    async () => {
      const database = await createServerDatabase();
      cleanups.push(() => database.drop());
      const token = "serve-test-operator-token-0123456789";
      const child = cds(["serve"], {
        DATABASE_URL: database.url,
        CDS_ADMIN_TOKEN: token,
        CDS_DATA_DIR: freshDir(),
      });
      const url = await listening(child);
      expect((await fetch(`${url}/ready`)).status).toBe(200);
      const tenants = await fetch(`${url}/admin/tenants`, { headers: { authorization: `Bearer ${token}` } });
      expect(tenants.status).toBe(200);
      expect(child.stdout()).not.toContain("Operator API token");
      expect(child.stdout()).not.toContain(token);
      expect(await stop(child)).toBe(0);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});

describe("cds migrate", () => {
  it(
    "applies every migration, then reports nothing to apply the second time",
    async () => {
      const env: Record<string, string> = {};
      if (SERVER_URL) {
        const database = await createServerDatabase();
        cleanups.push(() => database.drop());
        Object.assign(env, {
          DATABASE_URL: database.url,
          CDS_ADMIN_TOKEN: "migrate-test-operator-token-0123",
        });
      } else {
        env.CDS_DATA_DIR = freshDir();
      }
      const all = serviceMigrations();
      const first = cds(["migrate"], env);
      expect(await first.exited).toBe(0);
      const names = all.map((m) => `applied ${String(m.version).padStart(4, "0")}_${m.name}`);
      expect(first.stdout()).toBe(`${names.join("\n")}\n${all.length} applied, 0 were already applied\n`);
      const second = cds(["migrate"], env);
      expect(await second.exited).toBe(0);
      expect(second.stdout()).toBe(`nothing to apply (${all.length} migrations already applied)\n`);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});

describe("a bad configuration", () => {
  it(
    "stops the start at once with exit code 78 and a message naming the variable",
    async () => {
      const badPort = cds(["serve"], { PORT: "eighty", CDS_DATA_DIR: freshDir() });
      expect(await badPort.exited).toBe(78);
      expect(badPort.stderr()).toBe('configuration error: PORT: expected an integer, got "eighty"\n');
      const noToken = cds(["serve"], { DATABASE_URL: "postgres://127.0.0.1:1/none" });
      expect(await noToken.exited).toBe(78);
      expect(noToken.stderr()).toBe(
        "configuration error: CDS_ADMIN_TOKEN: is required when DATABASE_URL is set\n",
      );
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
