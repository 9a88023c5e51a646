import path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import type { Worker } from "node:worker_threads";
import { spawnThread, THREAD_READY } from "../../platform/thread-pool.js";
import { type SendOutcome, unanswered } from "./http-sender.js";

/**
 * One webhook attempt as the sending thread takes it: the body as stored, signed there with the
 * secret given (decision 0007's headers), and posted to `href` under one deadline.
 */
export interface SignedSend {
  href: string;
  body: string;
  secret: string;
  secretId: string | null;
  timeoutMs: number;
  allowPrivateTargets: boolean;
}

export interface SendMessage extends SignedSend {
  id: number;
}

export interface SentMessage {
  id: number;
  outcome: SendOutcome;
}

/**
 * Webhook attempts go out from a thread of their own (decision 0039): the HTTP exchange, its
 * signature, its socket writes and the parsing of the answer run on that thread's event loop,
 * not on the one that answers the API and runs the engine. What is sent in one turn of the event
 * loop goes over in one message, and the outcomes come back the same way; everything else of a
 * delivery (claims, lanes, the bookkeeping) stays here. A thread that stops fails what it had in
 * flight (each attempt a failure to retry, as a lost connection is) and is started again by the
 * next attempt.
 */
class SenderThread {
  #worker: Worker | undefined;
  #ready: Promise<void> | undefined;
  readonly #inFlight = new Map<number, { resolve: (outcome: SendOutcome) => void; at: number }>();
  #outbox: SendMessage[] = [];
  #nextId = 1;

  send(request: SignedSend): Promise<SendOutcome> {
    return new Promise((resolve) => {
      // An attempt in flight keeps the process alive, as its socket did on the event loop.
      if (this.#inFlight.size === 0) this.#worker?.ref();
      const id = this.#nextId++;
      this.#inFlight.set(id, { resolve, at: performance.now() });
      this.#outbox.push({ id, ...request });
      if (this.#outbox.length === 1) setImmediate(() => this.#flush());
    });
  }

  #flush(): void {
    const batch = this.#outbox;
    this.#outbox = [];
    if (batch.length > 0) this.#thread().postMessage(batch);
  }

  /** Starts the thread if it is not running; resolves once its script has loaded. */
  ready(): Promise<void> {
    this.#thread();
    return this.#ready as Promise<void>;
  }

  #thread(): Worker {
    if (this.#worker) return this.#worker;
    const here = fileURLToPath(import.meta.url);
    const worker = spawnThread(new URL(`./sender.worker${path.extname(here)}`, import.meta.url));
    let loaded!: () => void;
    // Not a failure to wait on: a thread that cannot start fails the attempts it was given.
    this.#ready = new Promise<void>((resolve) => {
      loaded = resolve;
    });
    worker.on("message", (sent: SentMessage[] | typeof THREAD_READY) => {
      if (sent !== THREAD_READY) {
        for (const { id, outcome } of sent) {
          const waiting = this.#inFlight.get(id);
          this.#inFlight.delete(id);
          waiting?.resolve(outcome);
        }
      } else loaded();
      // Idle, the thread never keeps the process alive.
      if (this.#inFlight.size === 0) worker.unref();
    });
    const lost = (why: string) => {
      loaded();
      if (this.#worker !== worker) return;
      this.#worker = undefined;
      const now = performance.now();
      for (const [id, waiting] of this.#inFlight) {
        this.#inFlight.delete(id);
        waiting.resolve(
          unanswered(
            `the webhook sending thread stopped (${why}) before an answer`,
            Math.round(now - waiting.at),
          ),
        );
      }
    };
    worker.on("error", (err) => lost(err.message));
    worker.on("exit", (code) => lost(`exit code ${code}`));
    // Held (a listener of its messages refs it anyway) until its script has loaded.
    worker.ref();
    this.#worker = worker;
    return worker;
  }
}

const thread = new SenderThread();

/**
 * Starts the sending thread, resolving once it can send: the delivery worker waits for it when it
 * starts, so that no attempt waits for the thread's modules to load.
 */
export function senderReady(): Promise<void> {
  return thread.ready();
}

/** Sends one webhook attempt from the sending thread. */
export function sendFromThread(request: SignedSend): Promise<SendOutcome> {
  return thread.send(request);
}
