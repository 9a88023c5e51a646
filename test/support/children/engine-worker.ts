/**
 * A worker process running every job of the service (workflow steps included) on the database
 * of DATABASE_URL or, embedded, CDS_DATA_DIR; configuration from the environment like `cds
 * worker`, with the test-only `probe` node type (and the `crash` node type with `--crash-node`).
 * Every 50 ms it prints `progress <steps> <decided> <failed>`: the number of recorded workflow
 * steps, of decided cases and of failed cases, so a test can kill it (SIGKILL) in the middle of
 * the work, or see what its cases came to.
 */
import { sql } from "kysely";
import { loadConfig } from "../../../src/config.js";
import { createAppContext } from "../../../src/context.js";
import { openDb } from "../../../src/platform/db/index.js";
import { createLogger } from "../../../src/platform/logger.js";
import { startWorker } from "../../../src/worker.js";
import { crashFeature } from "../crash-node.js";
import { featuresWithProbe } from "../probe-node.js";

const config = loadConfig(process.env);
const db = await openDb({
  databaseUrl: config.databaseUrl,
  dataDir: config.databaseUrl ? undefined : config.dataDir,
  poolSize: 4,
});
const features = process.argv.includes("--crash-node")
  ? [...featuresWithProbe, crashFeature]
  : featuresWithProbe;
const ctx = createAppContext({ config, db, log: createLogger(config.logLevel) }, features);
await startWorker(ctx);
const report = async () => {
  const { rows } = await sql<{ steps: number; decided: number; failed: number }>`
    SELECT (SELECT count(*) FROM case_steps)::int8 AS steps,
           (SELECT count(*) FROM cases WHERE status IN ('decided', 'in_review'))::int8 AS decided,
           (SELECT count(*) FROM cases WHERE status = 'failed')::int8 AS failed`.execute(db.root);
  process.stdout.write(`progress ${rows[0]?.steps} ${rows[0]?.decided} ${rows[0]?.failed}\n`);
};
setInterval(() => {
  report().catch((err) => process.stderr.write(`${(err as Error).message}\n`));
}, 50);
