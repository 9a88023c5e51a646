import { sql } from "kysely";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { Db } from "./db/index.js";

/**
 * The process's Prometheus metrics (`GET /metrics`). Every module adds its own to this one
 * registry (`new Counter({ ..., registers: [metricsRegistry] })`); metric names start `cds_`.
 * Counters and histograms count what this process did; the queue and worker gauges are read
 * from the database at each scrape, so they are the deployment's, whichever process answers.
 */
export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry, prefix: "cds_" });

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** A counter in the registry. */
function counter<L extends string>(name: string, help: string, labelNames: readonly L[]) {
  return new Counter({ name, help, labelNames, registers: [metricsRegistry] });
}

/** A histogram in the registry, in latency buckets unless told. */
function histogram<L extends string>(
  name: string,
  help: string,
  labelNames: readonly L[],
  buckets = LATENCY_BUCKETS,
) {
  return new Histogram({ name, help, labelNames, buckets, registers: [metricsRegistry] });
}

/** A gauge in the registry. */
function gauge<L extends string>(name: string, help: string, labelNames: readonly L[] = []) {
  return new Gauge({ name, help, labelNames, registers: [metricsRegistry] });
}

export const httpRequests = counter(
  "cds_http_requests_total",
  "HTTP requests answered, by method, route (the route's path pattern) and status",
  ["method", "route", "status"],
);

export const httpDuration = histogram(
  "cds_http_request_duration_seconds",
  "Time to answer an HTTP request, by method and route",
  ["method", "route"],
);

export const jobRuns = histogram(
  "cds_job_run_seconds",
  "Time to run a job by kind and outcome (done, failed): a workflow step is engine.step, a new case's first run engine.start",
  ["kind", "outcome"],
);

export const decisionLatency = histogram(
  "cds_case_decision_seconds",
  "Time from a case's submission to its workflow's decision, by decision",
  ["decision"],
  [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600, 86400],
);

export const webhookAttempts = counter(
  "cds_webhook_attempts_total",
  "Webhook delivery attempts, by outcome: succeeded, retrying (failed, will retry), failed (the last attempt failed), not_sent (no configuration, or out of attempts)",
  ["outcome"],
);

export const webhookClaims = counter(
  "cds_webhook_claims_total",
  "Claims of due webhook deliveries by a delivery worker, by outcome: took (some deliveries) or empty",
  ["outcome"],
);

export const historyWindowReads = counter(
  "cds_history_window_reads_total",
  "Reads of kept windows of links (decision 0021), by read: whole (every link of one window, once per process and key, or when a window reaches further back) or new (the links accepted since the last read, of every kept window a batch asks, in one statement)",
  ["read"],
);

export const providerCalls = histogram(
  "cds_provider_call_seconds",
  "Vendor calls made by verification providers (each attempt), by broker and outcome: ok, failed (5xx, timeout, unreachable; retried), rejected (4xx)",
  ["broker", "outcome"],
);

const jobsQueued = gauge(
  "cds_jobs_queued",
  "Jobs in the queue, by kind and state: ready (due, unclaimed), scheduled (due later), running (claimed), failed (out of attempts)",
  ["kind", "state"],
);

const jobsOldestReady = gauge(
  "cds_jobs_oldest_ready_age_seconds",
  "How long the oldest due, unclaimed job of each kind has been waiting",
  ["kind"],
);

const workersLive = gauge(
  "cds_workers_live",
  "Worker processes that reported within the last 30 seconds, across the deployment",
);

/** The gauges read from the database, refreshed for one scrape. */
export async function refreshDatabaseGauges(db: Db): Promise<void> {
  const queue = await sql<{
    kind: string;
    ready: string;
    scheduled: string;
    running: string;
    failed: string;
    age: number | null;
  }>`
    SELECT kind,
      count(*) FILTER (WHERE failed_at IS NULL AND locked_by IS NULL AND run_at <= now()) AS ready,
      count(*) FILTER (WHERE failed_at IS NULL AND locked_by IS NULL AND run_at > now()) AS scheduled,
      count(*) FILTER (WHERE failed_at IS NULL AND locked_by IS NOT NULL) AS running,
      count(*) FILTER (WHERE failed_at IS NOT NULL) AS failed,
      extract(epoch FROM now() - min(run_at) FILTER (WHERE failed_at IS NULL AND locked_by IS NULL AND run_at <= now()))::float8 AS age
    FROM jobs GROUP BY kind`.execute(db.root);
  jobsQueued.reset();
  jobsOldestReady.reset();
  for (const row of queue.rows) {
    for (const state of ["ready", "scheduled", "running", "failed"] as const) {
      jobsQueued.set({ kind: row.kind, state }, Number(row[state]));
    }
    jobsOldestReady.set({ kind: row.kind }, row.age ?? 0);
  }
  workersLive.set(await liveWorkers(db));
}

/** Workers seen within this window count as running (the heartbeat is every 10 s). */
export const WORKER_FRESH_SECONDS = 30;

export async function liveWorkers(db: Db): Promise<number> {
  const result = await sql<{ n: string }>`
    SELECT count(*) AS n FROM worker_heartbeats
    WHERE seen_at > now() - make_interval(secs => ${WORKER_FRESH_SECONDS})`.execute(db.root);
  return Number(result.rows[0]?.n ?? 0);
}
