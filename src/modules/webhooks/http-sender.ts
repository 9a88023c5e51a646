import http from "node:http";
import https from "node:https";
import net from "node:net";
import { performance } from "node:perf_hooks";
import { BlockedTargetError, guardedLookup, hostOf, isPrivateAddress } from "./target-safety.js";

/**
 * One webhook attempt over Node's own HTTP client: a POST of exactly the given bytes, with one
 * deadline over the whole exchange (lookup, connect, TLS, request, the complete response).
 * Redirects are never followed. Connections are kept alive and reused per origin.
 */
export interface SendRequest {
  url: URL;
  body: Buffer;
  headers: Record<string, string>;
  timeoutMs: number;
  allowPrivateTargets: boolean;
}

export interface SendOutcome {
  /** A 2xx answer arrived in full within the deadline. */
  ok: boolean;
  statusCode: number | null;
  latencyMs: number;
  /** Why the attempt failed without an answer (or null when an answer came). */
  error: string | null;
  /** The start of the answer's body, for the delivery log. */
  responseBody: string | null;
  /** The delay a 429 or 503 answer asked for with Retry-After, if any. */
  retryAfterMs: number | null;
}

/** How much of an answer's body is kept for the delivery log. */
export const RESPONSE_EXCERPT_BYTES = 2048;
/** An answer longer than this is not read to the end: the connection is closed instead. */
const MAX_READ_BYTES = 64 * 1024;

const agentOptions = { keepAlive: true, maxFreeSockets: 256, timeout: 15_000, scheduling: "lifo" as const };
const agents = { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) };

class DeadlineExceeded extends Error {
  constructor(timeoutMs: number) {
    super(`timed out after ${timeoutMs} ms without a complete answer`);
    this.name = "DeadlineExceeded";
  }
}

interface Answer {
  statusCode: number;
  headers: http.IncomingHttpHeaders;
  excerpt: Buffer;
}

/** PostgreSQL text cannot hold NUL; a receiver's bytes are shown, not trusted. */
function printable(bytes: Buffer): string {
  return bytes.toString("utf8").replaceAll("\u0000", "\ufffd");
}

export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | null {
  const raw = Array.isArray(value) ? value[0] : value;
  if (!raw) return null;
  if (/^\s*\d+\s*$/.test(raw)) return Number(raw.trim()) * 1000;
  const at = Date.parse(raw);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

function explain(err: unknown, host: string): string {
  if (err instanceof DeadlineExceeded || err instanceof BlockedTargetError) return err.message;
  const e = err as NodeJS.ErrnoException & { reason?: string };
  switch (e.code) {
    case "ECONNREFUSED":
      return `connection refused by ${host}`;
    case "ENOTFOUND":
    case "EAI_AGAIN":
    case "EAI_NONAME":
      return `DNS lookup of ${host} failed (${e.code})`;
    case "ECONNRESET":
      return `connection reset by ${host}`;
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return `${host} is unreachable (${e.code})`;
    default:
      if (e.code?.startsWith("ERR_TLS") || e.code?.includes("CERT")) return `TLS error: ${e.message}`;
      return `${e.code ? `${e.code}: ` : ""}${e.message ?? String(err)}`;
  }
}

function exchange(request: SendRequest, signal: AbortSignal): Promise<Answer & { reusedSocket: boolean }> {
  const { url } = request;
  const transport = url.protocol === "https:" ? https : http;
  return new Promise((resolve, reject) => {
    // A literal address is connected to without any lookup, so it is checked here instead.
    const host = hostOf(url);
    if (!request.allowPrivateTargets && net.isIP(host) && isPrivateAddress(host)) {
      reject(new BlockedTargetError(host, host));
      return;
    }
    let reusedSocket = false;
    const req = transport.request(
      url,
      {
        method: "POST",
        agent: url.protocol === "https:" ? agents.https : agents.http,
        headers: { ...request.headers, "content-length": String(request.body.length) },
        lookup: guardedLookup(request.allowPrivateTargets) as never,
        signal,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let read = 0;
        res.on("data", (chunk: Buffer) => {
          if (read < RESPONSE_EXCERPT_BYTES) chunks.push(chunk);
          read += chunk.length;
          if (read > MAX_READ_BYTES) {
            // Enough of it: the status decides, and this connection is not worth keeping.
            res.destroy();
            finish();
          }
        });
        let done = false;
        const finish = () => {
          if (done) return;
          done = true;
          resolve({
            statusCode: res.statusCode ?? 0,
            headers: res.headers,
            excerpt: Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES),
            reusedSocket,
          });
        };
        res.on("end", finish);
        res.on("error", (err) => {
          if (!done) reject(signal.aborted ? signal.reason : err);
        });
      },
    );
    // Whatever stage the exchange is in, the deadline ends it.
    signal.addEventListener("abort", () => reject(signal.reason), { once: true });
    req.on("socket", () => {
      reusedSocket = req.reusedSocket;
    });
    req.on("error", (err) => {
      (err as { reusedSocket?: boolean }).reusedSocket = reusedSocket;
      reject(signal.aborted ? signal.reason : err);
    });
    req.end(request.body);
  });
}

export async function sendWebhook(request: SendRequest): Promise<SendOutcome> {
  const started = performance.now();
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new DeadlineExceeded(request.timeoutMs)),
    request.timeoutMs,
  );
  const latency = () => Math.round(performance.now() - started);
  try {
    let answer: Answer;
    try {
      answer = await exchange(request, controller.signal);
    } catch (err) {
      // A kept-alive connection the receiver closed just as it was reused fails before the
      // request was read; that is not the receiver's answer, so try once on a fresh connection.
      const e = err as NodeJS.ErrnoException & { reusedSocket?: boolean };
      if (!e.reusedSocket || e.code !== "ECONNRESET" || controller.signal.aborted) throw err;
      answer = await exchange(request, controller.signal);
    }
    const ok = answer.statusCode >= 200 && answer.statusCode < 300;
    const asksToWait = answer.statusCode === 429 || answer.statusCode === 503;
    return {
      ok,
      statusCode: answer.statusCode,
      latencyMs: latency(),
      error: ok ? null : `HTTP ${answer.statusCode}`,
      responseBody: answer.excerpt.length > 0 ? printable(answer.excerpt) : null,
      retryAfterMs: asksToWait ? parseRetryAfter(answer.headers["retry-after"]) : null,
    };
  } catch (err) {
    return {
      ok: false,
      statusCode: null,
      latencyMs: latency(),
      error: explain(err, request.url.host),
      responseBody: null,
      retryAfterMs: null,
    };
  } finally {
    clearTimeout(timer);
  }
}
