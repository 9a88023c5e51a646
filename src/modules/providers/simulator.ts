import http from "node:http";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";

/**
 * What the vendor simulators share: a small HTTP server with JSON routes, injectable faults (an
 * error status or a delay on the next calls of an action) and figures of the time spent
 * answering, under `/_simulator/…`. The simulators stand in for vendors on a laptop, in the
 * tests and in the benchmarks; they speak the vendors' wire formats of contract section 5.
 */
export interface SimRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  rawBody: Buffer;
  /** The parsed JSON body (undefined when empty or not JSON). */
  body: unknown;
  params: string[];
}

export interface SimReply {
  status: number;
  body?: unknown;
  /** Sent as is with this content type instead of JSON. */
  html?: string;
  headers?: Record<string, string>;
}

export interface SimRoute {
  method: string;
  pattern: RegExp;
  /** The name faults and figures use (the broker records its calls under the same names). */
  action: string;
  /** Vendor routes are authenticated; simulator controls and pages are not. */
  vendor: boolean;
  handle(req: SimRequest): SimReply | Promise<SimReply>;
}

/** A route of the vendor's own API, authenticated as the vendor authenticates it. */
export function vendorRoute(
  method: string,
  pattern: RegExp,
  action: string,
  handle: SimRoute["handle"],
): SimRoute {
  return { method, pattern, action, vendor: true, handle };
}

/** A route of the simulator's controls or pages, open to anyone. */
export function controlRoute(
  method: string,
  pattern: RegExp,
  action: string,
  handle: SimRoute["handle"],
): SimRoute {
  return { method, pattern, action, vendor: false, handle };
}

interface Fault {
  action: string;
  status: number | undefined;
  delayMs: number;
  remaining: number;
}

export interface SimulatorStats {
  /** Vendor requests answered, by action. */
  requests: Record<string, number>;
  /** Milliseconds spent answering vendor requests, by action (injected delays included). */
  busyMs: Record<string, number>;
  /** Vendor requests being answered right now, by action. */
  inFlight: Record<string, number>;
}

export interface RunningSimulator {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export const json = (status: number, body: unknown): SimReply => ({ status, body });

export abstract class Simulator {
  readonly #faults: Fault[] = [];
  readonly stats: SimulatorStats = { requests: {}, busyMs: {}, inFlight: {} };
  #url = "";

  protected abstract routes(): SimRoute[];
  /** Checks a vendor request's credentials: undefined when they hold, else the refusal. */
  protected abstract authenticate(req: SimRequest): SimReply | undefined;

  get url(): string {
    return this.#url;
  }

  private controls(): SimRoute[] {
    return [
      controlRoute("POST", /^\/_simulator\/faults$/, "faults", (req) => {
        const b = (req.body ?? {}) as Partial<{
          action: string;
          status: number;
          delayMs: number;
          times: number;
        }>;
        this.#faults.push({
          action: b.action ?? "*",
          status: b.status,
          delayMs: b.delayMs ?? 0,
          remaining: b.times ?? 1,
        });
        return json(200, { ok: true });
      }),
      controlRoute("DELETE", /^\/_simulator\/faults$/, "faults", () => {
        this.#faults.length = 0;
        return json(200, { ok: true });
      }),
      controlRoute("GET", /^\/_simulator\/stats$/, "stats", () => json(200, this.stats)),
    ];
  }

  private takeFault(action: string): Fault | undefined {
    const fault = this.#faults.find((f) => f.remaining > 0 && (f.action === "*" || f.action === action));
    if (fault) fault.remaining--;
    return fault;
  }

  private async dispatch(req: SimRequest): Promise<SimReply> {
    for (const route of [...this.controls(), ...this.routes()]) {
      if (route.method !== req.method) continue;
      const match = route.pattern.exec(req.path);
      if (!match) continue;
      req.params = match.slice(1).map((p) => decodeURIComponent(p ?? ""));
      if (!route.vendor) return route.handle(req);
      const { action } = route;
      const started = performance.now();
      this.stats.inFlight[action] = (this.stats.inFlight[action] ?? 0) + 1;
      try {
        const refused = this.authenticate(req);
        if (refused) return refused;
        const fault = this.takeFault(action);
        if (fault?.delayMs) await sleep(fault.delayMs);
        if (fault?.status !== undefined) {
          return json(fault.status, { description: "simulated failure", code: fault.status });
        }
        return await route.handle(req);
      } finally {
        this.stats.inFlight[action] = (this.stats.inFlight[action] ?? 1) - 1;
        this.stats.requests[action] = (this.stats.requests[action] ?? 0) + 1;
        this.stats.busyMs[action] = (this.stats.busyMs[action] ?? 0) + (performance.now() - started);
      }
    }
    return json(404, { description: `no route ${req.method} ${req.path}`, code: 404 });
  }

  async listen(port: number, host = "127.0.0.1"): Promise<RunningSimulator> {
    const server = http.createServer((incoming, res) => {
      const chunks: Buffer[] = [];
      incoming.on("data", (c: Buffer) => chunks.push(c));
      incoming.on("end", () => {
        const url = new URL(incoming.url ?? "/", "http://simulator");
        const rawBody = Buffer.concat(chunks);
        let body: unknown;
        const type = incoming.headers["content-type"] ?? "";
        try {
          if (type.includes("application/x-www-form-urlencoded")) {
            body = Object.fromEntries(new URLSearchParams(rawBody.toString("utf8")));
          } else body = rawBody.length > 0 ? JSON.parse(rawBody.toString("utf8")) : undefined;
        } catch {
          body = undefined;
        }
        const req: SimRequest = {
          method: incoming.method ?? "GET",
          // Sumsub's paths carry `;` and `=`, which must reach the routes as sent.
          path: url.pathname,
          query: url.searchParams,
          headers: incoming.headers,
          rawBody,
          body,
          params: [],
        };
        this.dispatch(req).then(
          (reply) => {
            res.writeHead(reply.status, {
              "content-type": reply.html === undefined ? "application/json" : "text/html; charset=utf-8",
              ...reply.headers,
            });
            res.end(reply.html ?? (reply.body === undefined ? "" : JSON.stringify(reply.body)));
          },
          (err: Error) => {
            res.writeHead(500, { "content-type": "application/json" });
            res.end(JSON.stringify({ description: err.message, code: 500 }));
          },
        );
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => resolve());
    });
    const address = server.address() as AddressInfo;
    const shownHost = host.includes(":") ? `[${host}]` : host;
    this.#url = `http://${shownHost}:${address.port}`;
    return {
      url: this.#url,
      port: address.port,
      close: () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    };
  }
}
