/**
 * A worker process running every job of the service (backtests included, on their own worker)
 * on the database of DATABASE_URL or, embedded, CDS_DATA_DIR; configuration from the environment
 * like `cds worker`. Every 20 ms it prints `progress <done> <status>` of the backtest named by
 * BACKTEST_ID, so a test can kill it (SIGKILL) in the middle of the backtest.
 */
import { sql } from "kysely";
import { loadConfig } from "../../../src/config.js";
import { createAppContext } from "../../../src/context.js";
import { openDb } from "../../../src/platform/db/index.js";
import { createLogger } from "../../../src/platform/logger.js";
import { startWorker } from "../../../src/worker.js";

const config = loadConfig(process.env);
const db = await openDb({
  databaseUrl: config.databaseUrl,
  dataDir: config.databaseUrl ? undefined : config.dataDir,
  poolSize: 4,
});
const ctx = createAppContext({ config, db, log: createLogger(config.logLevel) });
await startWorker(ctx);
const report = async () => {
  const { rows } = await sql<{ done: number; status: string }>`
    SELECT done, status FROM backtests WHERE id = ${process.env.BACKTEST_ID}::uuid`.execute(db.root);
  process.stdout.write(`progress ${rows[0]?.done} ${rows[0]?.status}\n`);
};
setInterval(() => {
  report().catch((err) => process.stderr.write(`${(err as Error).message}\n`));
}, 20);
