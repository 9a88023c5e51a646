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

export const httpRequests = new Counter({
  name: "cds_http_requests_total",
  help: "HTTP requests answered, by method, route (the route's path pattern) and status",
  labelNames: ["method", "route", "status"] as const,
  registers: [metricsRegistry],
});

export const httpDuration = new Histogram({
  name: "cds_http_request_duration_seconds",
  help: "Time to answer an HTTP request, by method and route",
  labelNames: ["method", "route"] as const,
  buckets: LATENCY_BUCKETS,
  registers: [metricsRegistry],
});

export const jobRuns = new Histogram({
  name: "cds_job_run_seconds",
  help: "Time to run a job by kind and outcome (done, failed): a workflow step is engine.step, a new case's first run engine.start",
  labelNames: ["kind", "outcome"] as const,
  buckets: LATENCY_BUCKETS,
  registers: [metricsRegistry],
});

export const decisionLatency = new Histogram({
  name: "cds_case_decision_seconds",
  help: "Time from a case's submission to its workflow's decision, by decision",
  labelNames: ["decision"] as const,
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600, 86400],
  registers: [metricsRegistry],
});

export const webhookAttempts = new Counter({
  name: "cds_webhook_attempts_total",
  help: "Webhook delivery attempts, by outcome: succeeded, retrying (failed, will retry), failed (the last attempt failed), not_sent (no configuration, or out of attempts)",
  labelNames: ["outcome"] as const,
  registers: [metricsRegistry],
});

export const providerCalls = new Histogram({
  name: "cds_provider_call_seconds",
  help: "Vendor calls made by verification providers (each attempt), by broker and outcome: ok, failed (5xx, timeout, unreachable; retried), rejected (4xx)",
  labelNames: ["broker", "outcome"] as const,
  buckets: LATENCY_BUCKETS,
  registers: [metricsRegistry],
});

const jobsQueued = new Gauge({
  name: "cds_jobs_queued",
  help: "Jobs in the queue, by kind and state: ready (due, unclaimed), scheduled (due later), running (claimed), failed (out of attempts)",
  labelNames: ["kind", "state"] as const,
  registers: [metricsRegistry],
});

const jobsOldestReady = new Gauge({
  name: "cds_jobs_oldest_ready_age_seconds",
  help: "How long the oldest due, unclaimed job of each kind has been waiting",
  labelNames: ["kind"] as const,
  registers: [metricsRegistry],
});

const workersLive = new Gauge({
  name: "cds_workers_live",
  help: "Worker processes that reported within the last 30 seconds, across the deployment",
  registers: [metricsRegistry],
});

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
