import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { buildApp } from "../../src/app.js";
import { type Config, configWith, SERVER_START_LINGER_MS } from "../../src/config.js";
import { createAppContext } from "../../src/context.js";
import type { App } from "../../src/platform/app-types.js";
import type { AppContext } from "../../src/platform/context.js";
import type { JobWorker } from "../../src/platform/jobs.js";
import { createLogger } from "../../src/platform/logger.js";
import { startWorker } from "../../src/worker.js";
import { createTestDatabase, type TestDatabase } from "./db.js";
import { checkResponsesAgainstDocument } from "./openapi-check.js";
import { startTestS3, type TestS3 } from "./s3.js";

/**
 * The blob store the tests run with: `CDS_TEST_BLOB_STORE=s3` runs them against a test S3 server
 * (started per test app, on loopback); anything else, the disk store.
 */
export const TEST_BLOB_STORE: Config["blobStore"] = process.env.CDS_TEST_BLOB_STORE === "s3" ? "s3" : "disk";

export const ADMIN_TOKEN = "test-operator-token-0123456789";

export interface TestApp {
  app: App;
  ctx: AppContext;
  database: TestDatabase;
  /** The test S3 server behind the app's store, when the tests run with S3. */
  s3: TestS3 | undefined;
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
    // The default of the database the suite runs on (decision 0031), as `npm start` would take it.
    startLingerMs: process.env.DATABASE_URL ? SERVER_START_LINGER_MS : 0,
    // Tests are not about speed: an evaluation on a thread (decision 0024) finishes on a loaded
    // machine; the tests of the deadline set their own.
    evaluationDeadlineMs: 10_000,
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
  const s3 = TEST_BLOB_STORE === "s3" ? await startTestS3() : undefined;
  const config = testConfig({
    ...(s3 ? { blobStore: "s3" as const, s3: await s3.createBucket() } : {}),
    ...overrides,
  });
  const ctx = createAppContext({ config, db: database.db, log: createLogger(config.logLevel) });
  const app = await buildCheckedApp(ctx);
  await app.ready();
  const workers: JobWorker[] = [];
  return {
    app,
    ctx,
    database,
    s3,
    async startWorker() {
      const worker = await startWorker(ctx);
      workers.push(worker);
      return worker;
    },
    async close() {
      for (const w of workers) await w.stop();
      await app.close();
      await database.drop();
      await s3?.close();
      fs.rmSync(config.dataDir, { recursive: true, force: true });
    },
  };
}
