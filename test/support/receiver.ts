import http from "node:http";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import { emitEvents } from "../../src/modules/webhooks/events.js";
import type { Db } from "../../src/platform/db/index.js";

/**
 * A real local HTTP server standing in for a partner's webhook endpoint. It records every
 * request (raw body bytes and headers, in arrival order) and answers as each path is told:
 * a status, headers such as Retry-After, a delay, or a stall that never answers.
 */
export interface ReceivedRequest {
  method: string;
  /** Path and query string. */
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The body exactly as received. */
  body: Buffer;
  /** When the whole body had arrived, in epoch milliseconds with sub-millisecond precision. */
  at: number;
  /** Whether it is still unanswered with its connection open (neither answered nor given up on). */
  open: boolean;
  text(): string;
  // biome-ignore lint/suspicious/noExplicitAny: a received body is whatever the test expects
  json<T = any>(): T;
}

export interface Reply {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  /** Answer after this long. */
  delayMs?: number;
  /** Send the status and headers at once, and the body only after this long. */
  bodyDelayMs?: number;
  /** With `bodyDelayMs`: written at once after the status and headers, before the wait. */
  bodyFirst?: string;
  /** Never answer (the connection stays open until the client gives up or the receiver closes). */
  stall?: boolean;
}

/** Decides the answer; `index` counts the requests to this path so far, from 0. */
export type Responder = (request: ReceivedRequest, index: number) => Reply | Promise<Reply>;

const now = () => performance.timeOrigin + performance.now();

export class Receiver {
  readonly requests: ReceivedRequest[] = [];
  readonly #responders = new Map<string, Responder>();
  readonly #counts = new Map<string, number>();
  readonly #waiters = new Set<() => void>();
  readonly #timers = new Set<NodeJS.Timeout>();

  private constructor(private readonly server: http.Server) {}

  static async start(): Promise<Receiver> {
    const server = http.createServer();
    const receiver = new Receiver(server);
    server.on("request", (req, res) => receiver.#handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return receiver;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** The URL of a path on this receiver. */
  url(path = "/"): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** How requests to `path` (without query string) are answered; unknown paths get 200. */
  on(path: string, responder: Responder | Reply): this {
    this.#responders.set(path, typeof responder === "function" ? responder : () => responder);
    return this;
  }

  /** The requests received on a path (without query string), or all of them. */
  received(path?: string): ReceivedRequest[] {
    return path === undefined
      ? [...this.requests]
      : this.requests.filter((r) => r.path.split("?")[0] === path);
  }

  /** How many requests on `path` are still open: not answered, and not given up on by the client. */
  open(path: string): number {
    return this.received(path).filter((r) => r.open).length;
  }

  /** Resolves once `count` requests reached `path` (or any path), with them; rejects after the timeout. */
  async waitFor(
    count: number,
    options: { path?: string; timeoutMs?: number } = {},
  ): Promise<ReceivedRequest[]> {
    await this.waitUntil(() => this.received(options.path).length >= count, {
      timeoutMs: options.timeoutMs,
      what: `${count} request(s)${options.path ? ` on ${options.path}` : ""}`,
    });
    return this.received(options.path);
  }

  /** Resolves once the condition holds, checked on every request; rejects after the timeout. */
  waitUntil(condition: () => boolean, options: { timeoutMs?: number; what?: string } = {}): Promise<void> {
    if (condition()) return Promise.resolve();
    const timeoutMs = options.timeoutMs ?? 15_000;
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!condition()) return;
        clearTimeout(timer);
        this.#waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(
          new Error(
            `receiver: no ${options.what ?? "match"} within ${timeoutMs} ms (${this.requests.length} received)`,
          ),
        );
      }, timeoutMs);
      this.#waiters.add(check);
    });
  }

  async close(): Promise<void> {
    for (const t of this.#timers) clearTimeout(t);
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  #handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const received: ReceivedRequest = {
        method: req.method ?? "",
        path: req.url ?? "/",
        headers: req.headers,
        body,
        at: now(),
        open: true,
        text: () => body.toString("utf8"),
        json: () => JSON.parse(body.toString("utf8")),
      };
      res.on("close", () => {
        received.open = false;
      });
      const path = received.path.split("?")[0] as string;
      const index = this.#counts.get(path) ?? 0;
      this.#counts.set(path, index + 1);
      this.requests.push(received);
      for (const w of [...this.#waiters]) w();
      const responder = this.#responders.get(path) ?? (() => ({}));
      Promise.resolve(responder(received, index)).then(
        (reply) => this.#answer(res, reply),
        () => this.#answer(res, { status: 500 }),
      );
    });
  }

  #answer(res: http.ServerResponse, reply: Reply): void {
    if (reply.stall) return;
    const later = (ms: number, fn: () => void) => {
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        fn();
      }, ms);
      this.#timers.add(timer);
    };
    const send = () => {
      if (res.destroyed) return;
      res.writeHead(reply.status ?? 200, { "content-type": "text/plain", ...reply.headers });
      if (!reply.bodyDelayMs) {
        res.end(reply.body ?? "");
        return;
      }
      if (reply.bodyFirst) res.write(reply.bodyFirst);
      else res.flushHeaders();
      later(reply.bodyDelayMs, () => {
        if (!res.destroyed) res.end(reply.body ?? "");
      });
    };
    if (!reply.delayMs) {
      send();
      return;
    }
    later(reply.delayMs, send);
  }
}

export interface WebhookSetup {
  url: string;
  /** Default: one secret `s1` = `whsec_test_0123456789abcdef`, active. */
  secrets?: Array<{ id?: string; secret?: string }>;
  activeSecretId?: string | null;
  maxAttempts?: number;
  timeoutMs?: number;
}

export const TEST_WEBHOOK_SECRET = "whsec_test_0123456789abcdef";

/** Points a tenant's webhook configuration (`default` unless named) at a URL, through the operator API. */
export async function configureWebhook(
  app: { inject: (options: object) => Promise<{ statusCode: number; body: string }> },
  adminHeaders: Record<string, string>,
  tenantId: string,
  setup: WebhookSetup,
  webhookKey = "default",
): Promise<void> {
  const secrets = setup.secrets ?? [{ id: "s1", secret: TEST_WEBHOOK_SECRET }];
  const res = await app.inject({
    method: "PUT",
    url: `/admin/tenants/${tenantId}/webhooks/${webhookKey}`,
    headers: adminHeaders,
    payload: {
      url: setup.url,
      secrets,
      ...(setup.activeSecretId !== undefined
        ? { activeSecretId: setup.activeSecretId }
        : secrets[0]?.id
          ? { activeSecretId: secrets[0].id }
          : {}),
      ...(setup.maxAttempts === undefined ? {} : { maxAttempts: setup.maxAttempts }),
      ...(setup.timeoutMs === undefined ? {} : { timeoutMs: setup.timeoutMs }),
    },
  });
  if (res.statusCode !== 200)
    throw new Error(`configuring webhook ${webhookKey} answered ${res.statusCode}: ${res.body}`);
}

/** Emits a bare `case.decided` for a case in a transaction of its own, as the engine would. */
export async function emitDecided(db: Db, tenantId: string, caseId: string): Promise<string> {
  const [eventId] = await emitDecidedAll(db, tenantId, [caseId]);
  return eventId as string;
}

/** The same for several cases, in one transaction and one statement, as an engine batch writes them. */
export function emitDecidedAll(db: Db, tenantId: string, caseIds: string[]): Promise<string[]> {
  return db.transaction((tx) =>
    emitEvents(
      tx,
      caseIds.map((caseId) => ({
        tenantId,
        caseId,
        type: "case.decided" as const,
        webhookKey: null,
        dryRun: false,
        payload: { event_type: "case.decided", case_id: caseId, tenant_id: tenantId },
      })),
    ),
  );
}
