import type { Db } from "../../src/platform/db/index.js";
import type { LoadOptions, LoadRequest, LoadResult } from "./load.js";
import type { Partner, PartnerOptions } from "./provision.js";

/** One benchmark: the default export of a module in bench/scenarios/. */
export interface Scenario {
  /** Short and unique; `npm run bench -- <name>` runs this scenario only. */
  name: string;
  /** One line: what is measured and against what. */
  description: string;
  run(ctx: BenchContext): Promise<ScenarioResult>;
}

/** A named figure: a number with its unit in the name ("req/s", "p99 ms"), or a short text. */
export type Figure = number | string | null;

export interface ResultRow {
  /** What the row measured, e.g. "GET /health". */
  name: string;
  figures: Record<string, Figure>;
}

export interface ScenarioResult {
  rows: ResultRow[];
  /** Remarks printed under the table and kept in the JSON (a goal met or missed, a caveat). */
  notes?: string[];
}

export interface ServerOptions {
  /** Extra environment for the service process (CDS_ROLE, CDS_WORKER_CONCURRENCY, …). */
  env?: Record<string, string>;
  /**
   * Worker processes (`cds worker`) to run beside the service on its database, PostgreSQL only:
   * with `env: {CDS_ROLE: "api"}`, the API and the workers scale apart as in production.
   */
  workers?: number;
  /** The database to run on; default PostgreSQL when a server answers, else the embedded one. */
  database?: "postgres" | "pglite";
}

/** The real service, running in a child process of the bench on a database of its own. */
export interface BenchServer {
  /** Base URL, e.g. http://127.0.0.1:41234 (it may change across `withDb` on the embedded database). */
  readonly url: string;
  readonly adminToken: string;
  readonly database: "postgres" | "pglite";
  /** The PostgreSQL URL of the service's database (undefined on the embedded database). */
  readonly databaseUrl: string | undefined;
  /** A call of the operator API; throws with the status and body on a non-2xx answer. */
  admin<T = unknown>(method: string, path: string, body?: unknown): Promise<T>;
  /** A tenant with an API key (no rate limit unless given), tag options, and nothing else. */
  partner(options?: PartnerOptions): Promise<Partner>;
  /** Starts more worker processes (`cds worker`) on the service's database (PostgreSQL only). */
  addWorkers(count: number): Promise<void>;
  /** The process ids of the service's processes: the one `startServer` started, then its workers. */
  pids(): { service: number | undefined; workers: number[] };
  /**
   * Runs `fn` on the service's database from the bench process. On PostgreSQL a second connection
   * pool; on the embedded database the service is stopped for the duration and started again.
   */
  withDb<T>(fn: (db: Db) => Promise<T>): Promise<T>;
  /** Stops the service and drops its database. Done for you at the end of the scenario. */
  stop(): Promise<void>;
}

export interface BenchSettings {
  /** Seconds of each measured run (BENCH_DURATION, default 5). */
  durationSeconds: number;
  /** Measured runs per target; medians are reported (BENCH_REPEATS, default 5). */
  repeats: number;
  /** Seconds of warm-up per target before measuring (BENCH_WARMUP, default 3). */
  warmupSeconds: number;
  /** Concurrent HTTP connections of the load generator (BENCH_CONNECTIONS, default 32). */
  connections: number;
}

export interface BenchContext {
  readonly settings: BenchSettings;
  /** Starts the service; every server a scenario starts is stopped when it ends. */
  startServer(options?: ServerOptions): Promise<BenchServer>;
  /**
   * Loads each target in turn with autocannon: a warm-up each, then `repeats` rounds in which
   * every target runs once (interleaved, so drift on a noisy machine hits all alike). Reports the
   * median of each figure over the rounds. A target answering anything but 2xx is an error.
   */
  load(targets: LoadRequest[], options?: Partial<LoadOptions>): Promise<LoadResult[]>;
  /** Progress for the human watching; not part of the result. */
  log(message: string): void;
}
