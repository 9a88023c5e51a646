import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { buildApp } from "../../src/app.js";
import { type Config, configWith } from "../../src/config.js";
import { createAppContext } from "../../src/context.js";
import type { App } from "../../src/platform/app-types.js";
import type { AppContext } from "../../src/platform/context.js";
import type { JobWorker } from "../../src/platform/jobs.js";
import { createLogger } from "../../src/platform/logger.js";
import { startWorker } from "../../src/worker.js";
import { createTestDatabase, type TestDatabase } from "./db.js";
import { checkResponsesAgainstDocument } from "./openapi-check.js";

export const ADMIN_TOKEN = "test-operator-token-0123456789";

export interface TestApp {
  app: App;
  ctx: AppContext;
  database: TestDatabase;
  /** Starts this process's job worker (stopped by close). */
  startWorker(): Promise<JobWorker>;
  close(): Promise<void>;
}

export function testConfig(overrides: Partial<Config> = {}): Config {
  return configWith({
    dataDir: fs.mkdtempSync(path.join(os.tmpdir(), "cds-test-")),
    adminToken: ADMIN_TOKEN,
    secretKey: process.env.CDS_SECRET_KEY,
    logLevel: (process.env.CDS_TEST_LOG_LEVEL as Config["logLevel"]) ?? "silent",
    jobPollMs: 200,
    ...overrides,
  });
}

/**
 * The application of `buildApp`, with every response it gives checked against its own OpenAPI
 * document (see openapi-check.ts). Tests build apps through this, never `buildApp` directly.
 */
export async function buildCheckedApp(ctx: AppContext): Promise<App> {
  const app = await buildApp(ctx);
  checkResponsesAgainstDocument(app);
  return app;
}

/** The real application over a database of the test file's own. */
export async function createTestApp(overrides: Partial<Config> = {}): Promise<TestApp> {
  const database = await createTestDatabase();
  const config = testConfig(overrides);
  const ctx = createAppContext({ config, db: database.db, log: createLogger(config.logLevel) });
  const app = await buildCheckedApp(ctx);
  await app.ready();
  const workers: JobWorker[] = [];
  return {
    app,
    ctx,
    database,
    async startWorker() {
      const worker = await startWorker(ctx);
      workers.push(worker);
      return worker;
    },
    async close() {
      for (const w of workers) await w.stop();
      await app.close();
      await database.drop();
      fs.rmSync(config.dataDir, { recursive: true, force: true });
    },
  };
}
