import http from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import autocannon from "autocannon";
import { median, percentile } from "./stats.js";

/** One kind of request to put under load. */
export interface LoadRequest {
  /** Row name in the results, e.g. "GET /health". */
  name: string;
  /** The server's current base URL (read at each run). */
  baseUrl: () => string;
  /** Path and query, e.g. "/health". */
  path: string;
  method?: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  headers?: Record<string, string>;
  body?: string;
  /** Anything else autocannon accepts (`requests` with `setupRequest` for varying bodies, `pipelining`…). */
  autocannon?: Partial<autocannon.Options>;
}

export interface LoadOptions {
  durationSeconds: number;
  repeats: number;
  warmupSeconds: number;
  connections: number;
}

export interface LoadRun {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
}

export interface LoadResult {
  name: string;
  /** Medians over the runs. */
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  runs: LoadRun[];
}

async function loadOnce(target: LoadRequest, seconds: number, connections: number): Promise<LoadRun> {
  const result = await autocannon({
    url: `${target.baseUrl()}${target.path}`,
    method: target.method ?? "GET",
    headers: target.headers,
    body: target.body,
    connections,
    duration: seconds,
    ...target.autocannon,
  });
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(
      `${target.name}: ${result.non2xx} answers were not 2xx and ${result.errors} requests failed ` +
        `(status codes: ${JSON.stringify(result.statusCodeStats ?? {})}); the measurement would be meaningless`,
    );
  }
  return {
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    requests: result.requests.total,
  };
}

/** See BenchContext.load. */
export async function loadTargets(
  targets: LoadRequest[],
  options: LoadOptions,
  log: (message: string) => void,
): Promise<LoadResult[]> {
  for (const target of targets) {
    if (options.warmupSeconds > 0) {
      log(`warming up ${target.name} (${options.warmupSeconds} s)`);
      await loadOnce(target, options.warmupSeconds, options.connections);
    }
  }
  const runs = new Map<string, LoadRun[]>(targets.map((t) => [t.name, []]));
  for (let round = 1; round <= options.repeats; round++) {
    for (const target of targets) {
      const run = await loadOnce(target, options.durationSeconds, options.connections);
      runs.get(target.name)?.push(run);
      log(
        `round ${round}/${options.repeats} ${target.name}: ${Math.round(run.requestsPerSecond)} req/s, ` +
          `p50 ${run.p50Ms} ms, p99 ${run.p99Ms} ms`,
      );
    }
  }
  return targets.map((target) => {
    const own = runs.get(target.name) ?? [];
    return {
      name: target.name,
      requestsPerSecond: median(own.map((r) => r.requestsPerSecond)),
      p50Ms: median(own.map((r) => r.p50Ms)),
      p99Ms: median(own.map((r) => r.p99Ms)),
      runs: own,
    };
  });
}

/** An open-loop load at a fixed arrival rate. */
export interface PacedLoad {
  url: string;
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  headers?: Record<string, string>;
  /** One body for every request, or a function called for each request's own body. */
  body?: string | (() => string);
  /** Requests per second, spaced evenly (not fired in a burst at the top of each second). */
  rate: number;
  seconds: number;
  /** Keep-alive sockets; requests beyond them wait in the client, and that wait counts as latency. */
  connections: number;
  /** A status the load expects besides 2xx (a refusal it measures, such as 400). */
  expectStatus?: number;
}

export interface PacedRun {
  sent: number;
  /** Answered requests per second over the whole run, from the first send to the last answer. */
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
}

/**
 * Sends request i at start + i / rate, whether or not earlier ones were answered (open loop), so
 * that a slow server shows as latency instead of as a slower arrival rate. autocannon's
 * `overallRate` is not this: it lets each connection fire its share of a second's quota at once,
 * then idle until the next second, which turns a steady rate into bursts.
 */
export async function paced(load: PacedLoad): Promise<PacedRun> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: load.connections });
  const latencies: number[] = [];
  const failures: string[] = [];
  const inFlight = new Set<Promise<void>>();
  const send = (): Promise<void> =>
    new Promise<void>((resolve) => {
      const at = performance.now();
      const req = http.request(load.url, { method: load.method, headers: load.headers, agent }, (res) => {
        res.resume();
        res.on("end", () => {
          const status = res.statusCode ?? 0;
          if (status >= 300 && status !== load.expectStatus) failures.push(`status ${status}`);
          else latencies.push(performance.now() - at);
          resolve();
        });
      });
      req.on("error", (err) => {
        failures.push(err.message);
        resolve();
      });
      req.end(typeof load.body === "function" ? load.body() : load.body);
    });
  const total = Math.round(load.rate * load.seconds);
  const started = performance.now();
  for (let i = 0; i < total; ) {
    const due = Math.min(total, Math.floor(((performance.now() - started) * load.rate) / 1000) + 1);
    for (; i < due; i++) {
      const p = send();
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
    }
    await sleep(1);
  }
  await Promise.all(inFlight);
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  if (failures.length > 0)
    throw new Error(`paced load: ${failures.length} of ${total} requests failed (first: ${failures[0]})`);
  return {
    sent: total,
    requestsPerSecond: latencies.length / elapsed,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
  };
}
