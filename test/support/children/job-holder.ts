/**
 * A worker process that claims the `test.held` jobs and never finishes them, so that a test can
 * kill it with SIGKILL while it holds them. The database comes from DATABASE_URL or, for the
 * embedded database, CDS_DATA_DIR; the lease in seconds is the first argument. Prints
 * `running <kind> <jobId> <attempt> <workerId>` for each job it starts.
 */
import { openDb } from "../../../src/platform/db/index.js";
import { type JobHandler, JobWorker } from "../../../src/platform/jobs.js";
import { createLogger } from "../../../src/platform/logger.js";

const leaseSeconds = Number(process.argv[2] ?? "2");
const url = process.env.DATABASE_URL || undefined;
const db = await openDb(url ? { databaseUrl: url, poolSize: 4 } : { dataDir: process.env.CDS_DATA_DIR });

let worker: JobWorker | undefined;
const hold = (kind: string) => (job: { id: number; attempt: number }) => {
  process.stdout.write(`running ${kind} ${job.id} ${job.attempt} ${worker?.id}\n`);
  return new Promise<void>(() => {});
};
const handlers: JobHandler[] = [
  { kind: "test.held-plain", mode: "plain", run: hold("test.held-plain") },
  { kind: "test.held-tx", mode: "transaction", run: hold("test.held-tx") },
];
worker = new JobWorker(db, handlers, {
  concurrency: 4,
  leaseSeconds,
  pollMs: 100,
  logger: createLogger("silent"),
});
await worker.start();
setInterval(() => {}, 60_000);
