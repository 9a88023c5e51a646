import type { IncomingHttpHeaders } from "node:http";
import net from "node:net";
import { performance } from "node:perf_hooks";
import { Agent, type Dispatcher } from "undici";
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

/**
 * One exchange on undici's dispatcher, with a handler of its own: the answer's status, headers
 * and the start of its body, without the stream, async iterator and abort signal that undici's
 * `request()` wraps around each call (about a third of the client's CPU per attempt). `cancel`
 * ends it at once with the given reason; a request not yet on a socket is refused there, so
 * nothing goes out after its deadline.
 */
class Exchange implements Dispatcher.DispatchHandler {
  readonly answer: Promise<Answer>;
  #resolve!: (answer: Answer) => void;
  #reject!: (err: Error) => void;
  #controller: Dispatcher.DispatchController | null = null;
  #ended: Error | null = null;
  #settled = false;
  #statusCode = 0;
  #headers: IncomingHttpHeaders = {};
  readonly #chunks: Buffer[] = [];
  #read = 0;

  constructor() {
    this.answer = new Promise<Answer>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }

  cancel(reason: Error): void {
    if (this.#settled) return;
    this.#ended = reason;
    this.#fail(reason);
    this.#controller?.abort(reason);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    if (this.#ended) controller.abort(this.#ended);
    else this.#controller = controller;
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    // 1xx answers are informational: the final answer follows.
    if (statusCode < 200) return;
    this.#statusCode = statusCode;
    this.#headers = headers;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#read < RESPONSE_EXCERPT_BYTES) this.#chunks.push(chunk);
    this.#read += chunk.length;
    // Enough of it: the status decides, and this connection is not worth keeping.
    if (this.#read > MAX_READ_BYTES && !this.#settled) {
      this.#succeed();
      controller.abort(new Error("the answer's body was not read to its end"));
    }
  }

  onResponseEnd(): void {
    this.#succeed();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.#fail(err);
  }

  #succeed(): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#resolve({
      statusCode: this.#statusCode,
      headers: this.#headers,
      excerpt: Buffer.concat(this.#chunks).subarray(0, RESPONSE_EXCERPT_BYTES),
    });
  }

  #fail(err: Error): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#reject(err);
  }
}

/** An attempt's deadline: the exchange it would cancel, and why once it has passed. */
interface Deadline {
  current: Exchange | null;
  passed: Error | null;
}

function exchange(request: SendRequest, deadline: Deadline): Promise<Answer> {
  if (deadline.passed) return Promise.reject(deadline.passed);
  const { url } = request;
  // A literal address is connected to without any lookup, so it is checked here instead.
  const host = hostOf(url);
  if (!request.allowPrivateTargets && net.isIP(host) && isPrivateAddress(host)) {
    return Promise.reject(new BlockedTargetError(host, host));
  }
  const handler = new Exchange();
  deadline.current = handler;
  (request.allowPrivateTargets ? agents.open : agents.guarded).dispatch(
    {
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: "POST",
      headers: request.headers,
      body: request.body,
      // The deadline below bounds the whole exchange; undici's own timeouts are longer.
      headersTimeout: 0,
      bodyTimeout: 0,
    },
    handler,
  );
  return handler.answer;
}

/** An attempt that ended without an answer, and why. */
export function unanswered(error: string, latencyMs: number): SendOutcome {
  return { ok: false, statusCode: null, latencyMs, error, responseBody: null, retryAfterMs: null };
}

export async function sendWebhook(request: SendRequest): Promise<SendOutcome> {
  const started = performance.now();
  const deadline: Deadline = { current: null, passed: null };
  const timer = setTimeout(() => {
    deadline.passed = new DeadlineExceeded(request.timeoutMs);
    deadline.current?.cancel(deadline.passed);
  }, request.timeoutMs);
  const latency = () => Math.round(performance.now() - started);
  try {
    let answer: Answer;
    try {
      answer = await exchange(request, deadline);
    } catch (err) {
      // A kept-alive connection the receiver closed just as it was reused fails before any answer;
      // that is not the receiver's answer, so try once more (on a fresh connection).
      const code = (err as NodeJS.ErrnoException).code;
      if (code === undefined || !CLOSED_UNDER_US.has(code) || deadline.passed) throw err;
      answer = await exchange(request, deadline);
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
    return unanswered(explain(err, request.url.host), latency());
  } finally {
    clearTimeout(timer);
  }
}
