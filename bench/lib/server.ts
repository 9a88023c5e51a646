import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { OperatorClient } from "../../src/platform/cli/client.js";
import { randomBase62 } from "../../src/platform/crypto.js";
import { type Db, openDb } from "../../src/platform/db/index.js";
import { SERVICE_NODE_FLAGS } from "../../src/platform/node-flags.js";
import { createDatabase } from "./database.js";
import { provisionPartner } from "./provision.js";
import type { BenchServer, ServerOptions } from "./types.js";

export const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

interface Running {
  child: ChildProcess;
  url: string;
}

/**
 * Starts `node --import tsx src/main.ts <command>` and resolves once its log has a line matching
 * `started` (with that match), failing with the end of its output if it exits first.
 */
async function spawnService(
  command: "serve" | "worker",
  env: Record<string, string>,
  started: RegExp,
): Promise<{ child: ChildProcess; match: RegExpExecArray }> {
  // BENCH_SERVICE_NODE_ARGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" to profile the service.
  const nodeArgs = (process.env.BENCH_SERVICE_NODE_ARGS ?? "").split(" ").filter(Boolean);
  // The flags `npm start` runs the service with, then the bench's own (a later flag wins).
  const child = spawn(
    process.execPath,
    [...SERVICE_NODE_FLAGS, ...nodeArgs, "--import", "tsx", "src/main.ts", command],
    {
      cwd: PROJECT_ROOT,
      env: { ...process.env, CDS_LOG_LEVEL: "info", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  const match = await new Promise<RegExpExecArray>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString("utf8");
      const found = started.exec(output);
      if (found) {
        child.stdout?.off("data", onData);
        resolve(found);
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8");
    });
    child.once("exit", (code, signal) =>
      reject(new Error(`\`${command}\` exited (${code ?? signal}) before starting:\n${output.slice(-4000)}`)),
    );
  });
  // BENCH_SERVICE_OUTPUT_DIR: each process's output kept in a file (with --trace-gc, say).
  const outputDir = process.env.BENCH_SERVICE_OUTPUT_DIR;
  if (outputDir) {
    fs.mkdirSync(outputDir, { recursive: true });
    const file = fs.createWriteStream(path.join(outputDir, `${command}-${child.pid}.log`));
    file.write(output);
    // Two streams into one file: it ends when the process's output has, not when either stream does.
    child.stdout?.pipe(file, { end: false });
    child.stderr?.pipe(file, { end: false });
    child.once("close", () => file.end());
  } else {
    // Keep reading so that a full pipe never blocks the service.
    child.stdout?.resume();
    child.stderr?.resume();
  }
  return { child, match };
}

/** Starts the API (`src/main.ts serve`) and resolves once it listens and is ready. */
async function launch(env: Record<string, string>, log: (message: string) => void): Promise<Running> {
  const { child, match } = await spawnService(
    "serve",
    { PORT: "0", HOST: "127.0.0.1", ...env },
    /"msg":"Server listening at (http:\/\/[^"]+)"/,
  );
  const url = match[1] as string;
  // An API-only process is not ready until a worker runs, and its workers start after it.
  const probe = env.CDS_ROLE === "api" ? "/health" : "/ready";
  for (let i = 0; ; i++) {
    const res = await fetch(`${url}${probe}`).catch(() => undefined);
    if (res?.status === 200) break;
    if (i > 300) throw new Error(`the service at ${url} did not become ready`);
    await new Promise((r) => setTimeout(r, 100));
  }
  log(`service ready at ${url} (pid ${child.pid})`);
  return { child, url };
}

async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
  await exited;
  clearTimeout(timer);
}

/** Starts a worker process (`src/main.ts worker`) and resolves once it runs. */
async function launchWorker(
  env: Record<string, string>,
  log: (message: string) => void,
): Promise<ChildProcess> {
  const { child } = await spawnService("worker", env, /"msg":"case decisioning service started"/);
  log(`worker process running (pid ${child.pid})`);
  return child;
}

/** The service on a fresh PostgreSQL database of its own, or on a fresh embedded one. */
export async function startServer(
  options: ServerOptions & { usePostgres: boolean },
  log: (message: string) => void,
): Promise<BenchServer> {
  const adminToken = `bench_admin_${randomBase62(32)}`;
  const database = options.usePostgres ? await createDatabase() : undefined;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cds-bench-"));
  const env: Record<string, string> = {
    DATABASE_URL: database?.url ?? "",
    CDS_DATA_DIR: dataDir,
    CDS_ADMIN_TOKEN: adminToken,
    CDS_SECRET_KEY: randomBytes(32).toString("hex"),
    ...options.env,
  };
  let running: Running | undefined = await launch(env, log);
  let ownDb: Db | undefined;
  const workers: ChildProcess[] = [];
  const addWorkers = async (count: number) => {
    if (count > 0 && !database) log("extra worker processes need PostgreSQL; running without them");
    for (let i = 0; database && i < count; i++)
      workers.push(await launchWorker({ ...env, CDS_ROLE: "worker" }, log));
  };
  await addWorkers(options.workers ?? 0);

  const server: BenchServer = {
    get url() {
      if (!running) throw new Error("the service is not running");
      return running.url;
    },
    adminToken,
    database: database ? "postgres" : "pglite",
    databaseUrl: database?.url,
    admin<T>(method: string, apiPath: string, body?: unknown): Promise<T> {
      return new OperatorClient(server.url, adminToken).request<T>(method, apiPath, body);
    },
    partner: (partnerOptions) => provisionPartner((m, p, b) => server.admin(m, p, b), partnerOptions),
    addWorkers,
    pids: () => ({ service: running?.child.pid, workers: workers.flatMap((w) => (w.pid ? [w.pid] : [])) }),
    async withDb<T>(fn: (db: Db) => Promise<T>): Promise<T> {
      if (database) {
        ownDb ??= await openDb({ databaseUrl: database.url, poolSize: 4 });
        return fn(ownDb);
      }
      // The embedded database belongs to one process at a time.
      if (running) await terminate(running.child);
      running = undefined;
      const db = await openDb({ dataDir });
      try {
        return await fn(db);
      } finally {
        await db.close();
        running = await launch(env, log);
      }
    },
    async stop() {
      for (const worker of workers.splice(0)) await terminate(worker);
      if (running) await terminate(running.child);
      running = undefined;
      await ownDb?.close();
      ownDb = undefined;
      // BENCH_KEEP_DATABASE: the seeded database stays, for EXPLAIN after the run.
      if (process.env.BENCH_KEEP_DATABASE) log(`database kept: ${database?.url ?? dataDir}`);
      else {
        await database?.drop();
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
  return server;
}
