import http from "node:http";
import https from "node:https";
import net from "node:net";
import { performance } from "node:perf_hooks";
import { BlockedTargetError, guardedLookup, hostOf, isPrivateAddress } from "../webhooks/index.js";
import type { CallOutcome } from "./providers.tables.js";

/**
 * The one way brokers reach a vendor: JSON over HTTP with a deadline per attempt, retries with
 * backoff where the call is safe to repeat, and a record of every attempt (action, HTTP status,
 * duration, outcome; never the bodies, which carry tokens and personal data). Brokers describe
 * calls; this file sends them.
 */
export interface VendorRequest {
  /** The name the call is recorded under, e.g. `create_applicant`. */
  action: string;
  method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE";
  /** Path and query, appended to the configuration's base URL. */
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
  /**
   * When a failed attempt may be sent again: `always` for calls that are idempotent or whose
   * repetition the broker handles (the default); `unsent` only when the request surely never
   * reached the vendor (the connection was refused), for calls that mint something.
   */
  retry?: "always" | "unsent";
  /** Statuses besides 2xx that are answers rather than failures (404 of a lookup, 409 of a create). */
  accept?: readonly number[];
}

export interface VendorResponse {
  status: number;
  body: unknown;
}

export interface CallRecord {
  action: string;
  attempt: number;
  httpStatus: number | null;
  durationMs: number;
  outcome: CallOutcome;
  error: string | null;
}

/**
 * A vendor call that did not succeed. `unavailable`: the vendor could not be reached or kept
 * failing (5xx, timeouts) after the retries; `rejected`: the vendor refused the request (a 4xx),
 * which no retry changes.
 */
export class VendorError extends Error {
  constructor(
    readonly kind: "unavailable" | "rejected",
    readonly action: string,
    readonly httpStatus: number | null,
    message: string,
  ) {
    super(message);
    this.name = "VendorError";
  }
}

/** Signs a request: receives what is sent and returns headers to add. */
export type Signer = (request: {
  method: string;
  pathWithQuery: string;
  body: string;
}) => Record<string, string>;

export interface VendorClientOptions {
  baseUrl: string;
  timeoutMs: number;
  allowPrivateTargets: boolean;
  /** Waits between attempts: the contract's three attempts in all, 1 s and then 2 s apart. */
  backoffMs?: readonly number[];
  signer?: Signer;
  /** Called after every attempt, before the next one or the answer; it records the call. */
  onCall(record: CallRecord): Promise<void>;
}

export const DEFAULT_BACKOFF_MS = [1000, 2000] as const;
const MAX_ANSWER_BYTES = 1024 * 1024;
const USER_AGENT = "case-decisioning-providers/1.0";

const agentOptions = { keepAlive: true, maxFreeSockets: 64, timeout: 15_000 };
const agents = { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) };

class Deadline extends Error {
  constructor(timeoutMs: number) {
    super(`timed out after ${timeoutMs} ms`);
  }
}

interface Attempt {
  status: number | null;
  body: unknown;
  error: string | null;
  /** The request surely never reached the vendor. */
  unsent: boolean;
}

function explain(err: unknown, host: string): { error: string; unsent: boolean } {
  if (err instanceof Deadline) return { error: err.message, unsent: false };
  if (err instanceof BlockedTargetError) return { error: err.message, unsent: true };
  const e = err as NodeJS.ErrnoException;
  switch (e.code) {
    case "ECONNREFUSED":
      return { error: `connection refused by ${host}`, unsent: true };
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return { error: `DNS lookup of ${host} failed (${e.code})`, unsent: true };
    case "ECONNRESET":
      return { error: `connection reset by ${host}`, unsent: false };
    default:
      return { error: e.code ? `${e.code} from ${host}` : "the request failed", unsent: false };
  }
}

function send(
  url: URL,
  request: VendorRequest,
  body: string,
  headers: Record<string, string>,
  timeoutMs: number,
  allowPrivate: boolean,
): Promise<Attempt> {
  const transport = url.protocol === "https:" ? https : http;
  const host = hostOf(url);
  return new Promise((resolve) => {
    let settled = false;
    const done = (attempt: Attempt) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(attempt);
    };
    if (!allowPrivate && net.isIP(host) && isPrivateAddress(host)) {
      done({ status: null, body: null, ...explain(new BlockedTargetError(host, host), url.host) });
      return;
    }
    const req = transport.request(
      url,
      {
        method: request.method,
        agent: url.protocol === "https:" ? agents.https : agents.http,
        headers: {
          accept: "application/json",
          "user-agent": USER_AGENT,
          ...(body
            ? { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) }
            : {}),
          ...headers,
        },
        lookup: guardedLookup(allowPrivate) as never,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let read = 0;
        res.on("data", (chunk: Buffer) => {
          read += chunk.length;
          if (read > MAX_ANSWER_BYTES) {
            res.destroy();
            done({
              status: res.statusCode ?? 0,
              body: null,
              error: "the answer is larger than 1 MiB",
              unsent: false,
            });
            return;
          }
          chunks.push(chunk);
        });
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let parsed: unknown = null;
          try {
            parsed = text ? JSON.parse(text) : null;
          } catch {
            parsed = null;
          }
          done({ status: res.statusCode ?? 0, body: parsed, error: null, unsent: false });
        });
        res.on("error", (err) => done({ status: null, body: null, ...explain(err, url.host) }));
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      done({ status: null, body: null, ...explain(new Deadline(timeoutMs), url.host) });
    }, timeoutMs);
    req.on("error", (err) => done({ status: null, body: null, ...explain(err, url.host) }));
    req.end(body || undefined);
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class VendorClient {
  constructor(private readonly options: VendorClientOptions) {}

  /** Sends a call, retrying as it allows; the answer, or a VendorError. */
  async request(request: VendorRequest): Promise<VendorResponse> {
    const backoff = this.options.backoffMs ?? DEFAULT_BACKOFF_MS;
    const url = new URL(`${this.options.baseUrl.replace(/\/+$/, "")}${request.path}`);
    const body = request.body === undefined ? "" : JSON.stringify(request.body);
    const pathWithQuery = `${url.pathname}${url.search}`;
    for (let attempt = 1; ; attempt++) {
      const headers = {
        ...request.headers,
        ...this.options.signer?.({ method: request.method, pathWithQuery, body }),
      };
      const started = performance.now();
      const result = await send(
        url,
        request,
        body,
        headers,
        this.options.timeoutMs,
        this.options.allowPrivateTargets,
      );
      const durationMs = Math.round(performance.now() - started);
      const answered = result.status !== null && result.error === null;
      const accepted =
        answered &&
        ((result.status as number) < 300 || (request.accept ?? []).includes(result.status as number));
      const status = result.status;
      const transient = status === null || status >= 500 || status === 429;
      const error = accepted ? null : (result.error ?? `HTTP ${status}`);
      await this.options.onCall({
        action: request.action,
        attempt,
        httpStatus: status,
        durationMs,
        outcome: accepted ? "ok" : transient ? "failed" : "rejected",
        error,
      });
      if (accepted) return { status: status as number, body: result.body };
      if (!transient) {
        throw new VendorError(
          "rejected",
          request.action,
          status,
          `${request.action}: the vendor refused the request (${error})`,
        );
      }
      const mayRepeat = (request.retry ?? "always") === "always" || result.unsent;
      const wait = backoff[attempt - 1];
      if (!mayRepeat || wait === undefined) {
        throw new VendorError(
          "unavailable",
          request.action,
          status,
          `${request.action}: the vendor failed (${error})${attempt > 1 ? ` after ${attempt} attempts` : ""}`,
        );
      }
      await sleep(wait);
    }
  }
}
