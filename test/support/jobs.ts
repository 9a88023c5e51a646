import { setTimeout as delay } from "node:timers/promises";
import { sql } from "kysely";
import { afterAll, afterEach, beforeAll } from "vitest";
import { type Db, openDb } from "../../src/platform/db/index.js";
import { type ClaimedJob, type JobHandler, JobWorker, type WorkerOptions } from "../../src/platform/jobs.js";
import { createLogger } from "../../src/platform/logger.js";
import { createTestDatabase, type TestDatabase } from "./db.js";

/** What a test of the job queue records of each run of a job. */
export interface Run {
  attempt: number;
  payload: Record<string, unknown>;
  at: number;
}

/** A handler that records every run of its jobs, then does what `then` says. */
export function recording(
  kind: string,
  runs: Run[],
  then: (job: ClaimedJob) => Promise<void> | void = () => {},
  extra: Partial<JobHandler> = {},
): JobHandler {
  return {
    kind,
    mode: "plain",
    async run(job) {
      runs.push({ attempt: job.attempt, payload: job.payload, at: Date.now() });
      await then(job);
    },
    ...extra,
  } as JobHandler;
}

export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await delay(20);
  }
}

export interface JobsHarness {
  readonly database: TestDatabase;
  readonly db: Db;
  /**
   * The database as another process would see it: on PostgreSQL a handle of its own (its own
   * pool and LISTEN connection); on the embedded database, which one process owns, the same one.
   */
  processDb(): Promise<Db>;
  /** A started worker with test defaults (8 slots, 30 s lease, 100 ms poll); stopped after each test. */
  startWorker(on: Db, handlers: JobHandler[], options?: Partial<WorkerOptions>): Promise<JobWorker>;
  jobRows(kind: string): ReturnType<typeof listJobs>;
}

function listJobs(db: Db, kind: string) {
  return db.root.selectFrom("jobs").selectAll().where("kind", "=", kind).orderBy("id").execute();
}

/** Registers the hooks of a job queue test file: its own database, workers stopped after each test. */
export function jobsHarness(): JobsHarness {
  let database: TestDatabase | undefined;
  const handles: Db[] = [];
  const workers: JobWorker[] = [];
  const log = createLogger("silent");

  beforeAll(async () => {
    database = await createTestDatabase();
    await sql`CREATE TABLE job_effects (kind text NOT NULL, n integer NOT NULL)`.execute(database.db.root);
  });
  afterEach(async () => {
    for (const worker of workers.splice(0)) await worker.stop();
  });
  afterAll(async () => {
    for (const handle of handles) await handle.close();
    await database?.drop();
  });

  const harness: JobsHarness = {
    get database() {
      if (!database) throw new Error("the database is made in beforeAll");
      return database;
    },
    get db() {
      return harness.database.db;
    },
    async processDb() {
      const url = harness.database.url;
      if (!url) return harness.db;
      const handle = await openDb({ databaseUrl: url, poolSize: 6 });
      handles.push(handle);
      return handle;
    },
    async startWorker(on, handlers, options = {}) {
      const worker = new JobWorker(on, handlers, {
        concurrency: 8,
        leaseSeconds: 30,
        pollMs: 100,
        logger: log,
        ...options,
      });
      workers.push(worker);
      await worker.start();
      return worker;
    },
    jobRows: (kind) => listJobs(harness.db, kind),
  };
  return harness;
}
