import type { IncomingHttpHeaders } from "node:http";
import net from "node:net";
import { performance } from "node:perf_hooks";
import { Agent, request as undiciRequest } from "undici";
import { BlockedTargetError, guardedLookup, hostOf, isPrivateAddress } from "./target-safety.js";

/**
 * One webhook attempt over undici, Node's own HTTP/1.1 client library (`node:http`'s client took
 * about 1.6 times its CPU per attempt): a POST of exactly the given bytes, with one deadline over the whole
 * exchange (lookup, connect, TLS, request, the complete response). Redirects are never followed.
 * Connections are kept alive and reused per origin.
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

/**
 * One connection pool per origin, kept alive, in two agents: one whose connections resolve names
 * through the target check (a name that answers with a private address is refused at connect,
 * DNS rebinding included), and one for a service allowed to call private targets.
 */
const agents = {
  guarded: new Agent({ connect: { lookup: guardedLookup(false) as never }, keepAliveTimeout: 15_000 }),
  open: new Agent({ connect: { lookup: guardedLookup(true) as never }, keepAliveTimeout: 15_000 }),
};

class DeadlineExceeded extends Error {
  constructor(timeoutMs: number) {
    super(`timed out after ${timeoutMs} ms without a complete answer`);
    this.name = "DeadlineExceeded";
  }
}

interface Answer {
  statusCode: number;
  headers: IncomingHttpHeaders;
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
    case "UND_ERR_SOCKET":
      return `connection closed by ${host} before a complete answer`;
    case "UND_ERR_CONNECT_TIMEOUT":
      return `connecting to ${host} timed out`;
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return `${host} is unreachable (${e.code})`;
    default:
      if (e.code?.startsWith("ERR_TLS") || e.code?.includes("CERT")) return `TLS error: ${e.message}`;
      return `${e.code ? `${e.code}: ` : ""}${e.message ?? String(err)}`;
  }
}

/** Codes of a connection the receiver closed under the request before any answer. */
const CLOSED_UNDER_US = new Set(["ECONNRESET", "UND_ERR_SOCKET", "EPIPE"]);

async function exchange(request: SendRequest, signal: AbortSignal): Promise<Answer> {
  const { url } = request;
  // A literal address is connected to without any lookup, so it is checked here instead.
  const host = hostOf(url);
  if (!request.allowPrivateTargets && net.isIP(host) && isPrivateAddress(host)) {
    throw new BlockedTargetError(host, host);
  }
  const res = await undiciRequest(url, {
    method: "POST",
    dispatcher: request.allowPrivateTargets ? agents.open : agents.guarded,
    headers: request.headers,
    body: request.body,
    signal,
  });
  const chunks: Buffer[] = [];
  let read = 0;
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    if (read < RESPONSE_EXCERPT_BYTES) chunks.push(chunk);
    read += chunk.length;
    // Enough of it: the status decides, and this connection is not worth keeping (leaving the
    // loop destroys the body, and with it the connection).
    if (read > MAX_READ_BYTES) break;
  }
  return {
    statusCode: res.statusCode,
    headers: res.headers as IncomingHttpHeaders,
    excerpt: Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES),
  };
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
      // A kept-alive connection the receiver closed just as it was reused fails before any answer;
      // that is not the receiver's answer, so try once more (on a fresh connection).
      const code = (err as NodeJS.ErrnoException).code;
      if (code === undefined || !CLOSED_UNDER_US.has(code) || controller.signal.aborted) throw err;
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
