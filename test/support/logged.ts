import fs from "node:fs";
import { Writable } from "node:stream";
import { createAppContext } from "../../src/context.js";
import type { App } from "../../src/platform/app-types.js";
import type { AppContext } from "../../src/platform/context.js";
import type { JobWorker } from "../../src/platform/jobs.js";
import { createLogger } from "../../src/platform/logger.js";
import { startWorker } from "../../src/worker.js";
import { buildCheckedApp, testConfig } from "./app.js";
import { createTestDatabase, type TestDatabase } from "./db.js";

/** The app and a worker on a database of their own, every log line of both kept in `lines`. */
export interface LoggedService {
  app: App;
  ctx: AppContext;
  worker: JobWorker;
  /** Every log line, at the most talkative level. */
  lines: string[];
  close(): Promise<void>;
}

export async function startLoggedService(): Promise<LoggedService> {
  const database: TestDatabase = await createTestDatabase();
  const config = testConfig({ logLevel: "trace" });
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, callback) {
      lines.push(String(chunk));
      callback();
    },
  });
  const ctx = createAppContext({ config, db: database.db, log: createLogger("trace", sink) });
  const app = await buildCheckedApp(ctx);
  const worker = await startWorker(ctx);
  return {
    app,
    ctx,
    worker,
    lines,
    async close() {
      await worker.stop();
      await app.close();
      await database.drop();
      fs.rmSync(config.dataDir, { recursive: true, force: true });
    },
  };
}
