/**
 * A delivering process for the webhook crash test: the service's workers over the database the
 * environment names (DATABASE_URL, else the embedded one in CDS_DATA_DIR). Prints "ready" once
 * it works, and "settled <succeeded> <failed>" whenever no delivery is pending. SIGTERM stops it
 * cleanly; the test mostly ends it with SIGKILL.
 *
 * With arguments `<tenantId> <caseId> <count>` it also emits that many events in one transaction
 * of its own once it works, and prints "emitted <handed> <claims>": how many of their deliveries
 * its insert leased to this process's worker, and how many claim rows exist, right after commit.
 */
import { loadConfig } from "../../../src/config.js";
import { createAppContext } from "../../../src/context.js";
import { emitEvents } from "../../../src/modules/webhooks/events.js";
import { openDb } from "../../../src/platform/db/index.js";
import { createLogger } from "../../../src/platform/logger.js";
import { startWorker } from "../../../src/worker.js";

const config = loadConfig(process.env);
const db = await openDb({
  databaseUrl: config.databaseUrl,
  dataDir: config.databaseUrl ? undefined : config.dataDir,
  poolSize: config.dbPoolSize,
});
const ctx = createAppContext({ config, db, log: createLogger(config.logLevel) });
const worker = await startWorker(ctx);
process.stdout.write(`ready ${process.pid}\n`);

const [tenantId, caseId, count] = process.argv.slice(2);
if (tenantId && caseId && count) {
  const events = Array.from({ length: Number(count) }, (_, i) => ({
    tenantId,
    caseId,
    type: "node.notification" as const,
    webhookKey: null,
    dryRun: false,
    payload: {
      event_type: "node.notification",
      tenantId,
      caseId,
      nodeId: "notify",
      webhookKey: null,
      output: { i },
    },
  }));
  const ids = await db.transaction((tx) => emitEvents(tx, events));
  const handed = await db.root
    .selectFrom("webhook_deliveries")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("event_id", "in", ids)
    .where("claims", "=", 0)
    .where("handed_until", "is not", null)
    .executeTakeFirstOrThrow();
  const claims = await db.root
    .selectFrom("webhook_claims")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .executeTakeFirstOrThrow();
  process.stdout.write(`emitted ${Number(handed.n)} ${Number(claims.n)}\n`);
}

let checking = false;
const poll = setInterval(() => {
  if (checking) return;
  checking = true;
  db.root
    .selectFrom("webhook_deliveries")
    .select(["status", (eb) => eb.fn.countAll<number>().as("n")])
    .groupBy("status")
    .execute()
    .then((rows) => {
      const count = (status: string) => Number(rows.find((r) => r.status === status)?.n ?? 0);
      if (count("pending") === 0) process.stdout.write(`settled ${count("succeeded")} ${count("failed")}\n`);
    })
    .catch(() => {})
    .finally(() => {
      checking = false;
    });
}, 200);

process.once("SIGTERM", () => {
  clearInterval(poll);
  void worker
    .stop()
    .then(() => db.close())
    .then(() => process.exit(0));
});
