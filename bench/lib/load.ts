import autocannon from "autocannon";
import { median } from "./stats.js";

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
