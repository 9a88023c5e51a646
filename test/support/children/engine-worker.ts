/**
 * A worker process running every job of the service (workflow steps included) on the database
 * of DATABASE_URL or, embedded, CDS_DATA_DIR; configuration from the environment like `cds
 * worker`, with the test-only `probe` node type. Every 50 ms it prints `progress <steps> <decided>`: the number of recorded workflow
 * steps and of decided cases, so a test can kill it (SIGKILL) in the middle of the work.
 */
import { sql } from "kysely";
import { loadConfig } from "../../../src/config.js";
import { createAppContext } from "../../../src/context.js";
import { openDb } from "../../../src/platform/db/index.js";
import { createLogger } from "../../../src/platform/logger.js";
import { startWorker } from "../../../src/worker.js";
import { featuresWithProbe } from "../probe-node.js";

const config = loadConfig(process.env);
const db = await openDb({
  databaseUrl: config.databaseUrl,
  dataDir: config.databaseUrl ? undefined : config.dataDir,
  poolSize: 4,
});
const ctx = createAppContext({ config, db, log: createLogger(config.logLevel) }, featuresWithProbe);
await startWorker(ctx);
const report = async () => {
  const { rows } = await sql<{ steps: number; decided: number }>`
    SELECT (SELECT count(*) FROM case_steps)::int8 AS steps,
           (SELECT count(*) FROM cases WHERE status IN ('decided', 'in_review'))::int8 AS decided`.execute(
    db.root,
  );
  process.stdout.write(`progress ${rows[0]?.steps} ${rows[0]?.decided}\n`);
};
setInterval(() => {
  report().catch((err) => process.stderr.write(`${(err as Error).message}\n`));
}, 50);
