import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { type MessagePort, Worker, type WorkerOptions, workerData } from "node:worker_threads";

/** A task ran past its deadline; its thread was ended and a fresh one takes its place. */
export class DeadlineExceeded extends Error {
  constructor(readonly deadlineMs: number) {
    super(`did not finish within ${deadlineMs} ms`);
    this.name = "DeadlineExceeded";
  }
}

interface Queued<T, R> {
  task: T;
  deadlineMs: number;
  /** Whose task it is (a tenant): tasks are queued, shared out and held back per owner. */
  owner: string;
  resolve(result: R): void;
  reject(err: unknown): void;
}

interface Slot {
  worker: Worker;
  /** Loading its script (not yet ready), running a task, or free. */
  state: "starting" | "busy" | "free";
}

/** Heap of one thread. */
const THREAD_HEAP_MB = 256;

/** The first message a thread sends once its script has loaded: its deadlines start after it. */
export const THREAD_READY = "ready";

/**
 * How long an owner whose task ran past half its deadline (or to it, or killed its thread) is
 * served after every other owner with tasks waiting.
 */
export const HELD_BACK_MS = 10_000;

export interface ThreadPoolOptions {
  /** Threads at most; by default one per core beyond the first, at most four. */
  size?: number;
  /** Threads one owner may hold at once; by default half the threads, rounded up. */
  perOwner?: number;
  /**
   * How much lower than the process the threads' CPU priority is (a nice increment, 0 to 19;
   * Linux only): where a thread and the process's event loop want the same core, the event loop
   * gets it first.
   */
  niceness?: number;
}

/**
 * A few worker threads (node:worker_threads) that run one task each at a time, each task with a
 * wall-clock deadline counted from when a thread takes it: past it the thread is terminated,
 * which interrupts even a single long synchronous call, and the task fails with
 * `DeadlineExceeded`. The script first posts
 * `THREAD_READY` (loading it is not the task's time), then answers each message with one
 * message. Threads are unreferenced: an idle pool never keeps a process alive.
 *
 * Tasks wait per owner (a tenant), and owners take turns (decision 0029): a free thread takes
 * the next owner's oldest task, so one owner's backlog never stands in front of another's
 * task; no owner holds more than `perOwner` threads at once, even when the others are idle; and
 * an owner whose task ran past half its deadline (or to it) in the last `HELD_BACK_MS` is
 * served only when no other owner waits. Everything is per process and in memory.
 *
 * Run from TypeScript sources (development and tests), the script is a `.ts` file and its
 * thread loads it through tsx, as the process does; from `dist/`, it is plain JavaScript.
 */
export class ThreadPool<T, R> {
  readonly #slots: Slot[] = [];
  /** Waiting tasks by owner; the map's order is the owners' turns (an owner served goes last). */
  readonly #queues = new Map<string, Queued<T, R>[]>();
  /** Tasks on threads, by owner. */
  readonly #running = new Map<string, number>();
  /** Owners held back, until when (`performance.now()`). */
  readonly #heldBack = new Map<string, number>();
  readonly #size: number;
  readonly #perOwner: number;
  readonly #niceness: number;
  #closed = false;

  constructor(
    private readonly script: URL,
    options: ThreadPoolOptions = {},
  ) {
    this.#size = options.size ?? defaultThreads();
    this.#perOwner = Math.max(1, options.perOwner ?? Math.ceil(this.#size / 2));
    this.#niceness = options.niceness ?? 0;
  }

  run(task: T, deadlineMs: number, owner = ""): Promise<R> {
    if (this.#closed) return Promise.reject(new Error("the thread pool is closed"));
    return new Promise<R>((resolve, reject) => {
      const queue = this.#queues.get(owner);
      const job = { task, deadlineMs, owner, resolve, reject };
      if (queue) queue.push(job);
      else this.#queues.set(owner, [job]);
      this.#drain();
    });
  }

  /** The owner's tasks waiting for a thread or on one. */
  pending(owner: string): number {
    return this.waiting(owner) + (this.#running.get(owner) ?? 0);
  }

  /** The owner's tasks waiting for a thread. */
  waiting(owner: string): number {
    return this.#queues.get(owner)?.length ?? 0;
  }

  /** Ends every thread; tasks still waiting fail. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const q of this.#takeAll()) q.reject(new Error("the thread pool is closed"));
    await Promise.all(this.#slots.splice(0).map((s) => s.worker.terminate()));
  }

  #takeAll(): Queued<T, R>[] {
    const all = [...this.#queues.values()].flat();
    this.#queues.clear();
    return all;
  }

  /**
   * The next task to run: the oldest of the first owner in turn below its share of threads, one
   * not held back if there is one. Its owner's turn goes to the end.
   */
  #next(): Queued<T, R> | undefined {
    const now = performance.now();
    let chosen: string | undefined;
    for (const owner of this.#queues.keys()) {
      if ((this.#running.get(owner) ?? 0) >= this.#perOwner) continue;
      const until = this.#heldBack.get(owner);
      if (until !== undefined && until <= now) this.#heldBack.delete(owner);
      if (until === undefined || until <= now) {
        chosen = owner;
        break;
      }
      chosen ??= owner;
    }
    if (chosen === undefined) return undefined;
    const queue = this.#queues.get(chosen) as Queued<T, R>[];
    const job = queue.shift() as Queued<T, R>;
    this.#queues.delete(chosen);
    if (queue.length > 0) this.#queues.set(chosen, queue);
    return job;
  }

  /** Tasks some thread could take now (their owners below their share). */
  #runnable(): number {
    let n = 0;
    for (const [owner, queue] of this.#queues)
      n += Math.min(queue.length, Math.max(0, this.#perOwner - (this.#running.get(owner) ?? 0)));
    return n;
  }

  #drain(): void {
    while (this.#queues.size > 0) {
      const slot = this.#slots.find((s) => s.state === "free");
      if (!slot) {
        const starting = this.#slots.filter((s) => s.state === "starting").length;
        if (this.#slots.length < this.#size && starting < this.#runnable()) this.#spawn();
        return;
      }
      const job = this.#next();
      if (!job) return;
      this.#start(slot, job);
    }
  }

  #spawn(): void {
    // A thread that runs out of memory ends alone, with an error, rather than the process.
    const options = {
      resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB },
      workerData: { niceness: this.#niceness } satisfies ThreadData,
    };
    const worker = spawnThread(this.script, options);
    const slot: Slot = { worker, state: "starting" };
    this.#slots.push(slot);
    const lost = (err: unknown) => {
      this.#remove(slot);
      // A thread that cannot even start fails what waits, rather than respawning forever.
      for (const q of this.#takeAll()) q.reject(err);
    };
    const onExit = (code: number) =>
      lost(new Error(`an evaluation thread exited with code ${code} while starting`));
    worker.once("error", lost);
    worker.once("exit", onExit);
    worker.once("message", () => {
      worker.off("error", lost);
      worker.off("exit", onExit);
      slot.state = "free";
      this.#drain();
    });
  }

  #remove(slot: Slot): void {
    const at = this.#slots.indexOf(slot);
    if (at >= 0) this.#slots.splice(at, 1);
    void slot.worker.terminate();
  }

  #start(slot: Slot, job: Queued<T, R>): void {
    slot.state = "busy";
    const { worker } = slot;
    const { owner } = job;
    this.#running.set(owner, (this.#running.get(owner) ?? 0) + 1);
    const started = performance.now();
    /** `ended`: the thread was terminated or died under the task. */
    const settle = (ended: boolean) => {
      clearTimeout(timer);
      worker.off("message", onMessage);
      worker.off("error", onError);
      worker.off("exit", onExit);
      const left = (this.#running.get(owner) ?? 1) - 1;
      if (left > 0) this.#running.set(owner, left);
      else this.#running.delete(owner);
      const now = performance.now();
      // Half its deadline or more, or its thread ended: the owner's next tasks wait for others'.
      if (ended || now - started >= job.deadlineMs / 2) this.#holdBack(owner, now);
    };
    const onMessage = (result: R) => {
      settle(false);
      slot.state = "free";
      job.resolve(result);
      this.#drain();
    };
    const onError = (err: unknown) => {
      settle(true);
      this.#remove(slot);
      job.reject(err);
      this.#drain();
    };
    const onExit = (code: number) => onError(new Error(`an evaluation thread exited with code ${code}`));
    const timer = setTimeout(() => {
      settle(true);
      this.#remove(slot);
      job.reject(new DeadlineExceeded(job.deadlineMs));
      this.#drain();
    }, job.deadlineMs);
    worker.on("message", onMessage);
    worker.on("error", onError);
    worker.on("exit", onExit);
    worker.postMessage(job.task);
  }

  #holdBack(owner: string, now: number): void {
    this.#heldBack.set(owner, now + HELD_BACK_MS);
    // Bounded by the owners seen in the last HELD_BACK_MS: the expired go when one is added.
    for (const [o, until] of this.#heldBack) if (until <= now) this.#heldBack.delete(o);
  }
}

interface ThreadData {
  niceness: number;
}

/**
 * A worker thread running `script`, unreferenced (it never keeps the process alive). From
 * TypeScript sources (development and tests) the script is a `.ts` file, which the thread loads
 * through tsx as the process does; from `dist/`, it is plain JavaScript.
 */
export function spawnThread(script: URL, options: WorkerOptions = {}): Worker {
  const worker = script.pathname.endsWith(".ts")
    ? // Loader hooks given with --import do not reach a worker's own entry on Node 20: the
      // thread registers tsx itself, then imports the script.
      new Worker(
        `import(${JSON.stringify(import.meta.resolve("tsx/esm/api"))})` +
          `.then((tsx) => { tsx.register(); return import(${JSON.stringify(script.href)}); })`,
        { ...options, eval: true },
      )
    : new Worker(script, options);
  worker.unref();
  return worker;
}

/**
 * Called by a pool's thread script once it has loaded: the thread takes the pool's priority,
 * then tells the pool it is ready (its deadlines start after this).
 */
export function threadReady(port: MessagePort): void {
  const { niceness } = workerData as ThreadData;
  if (niceness > 0) lowerThisThread(niceness);
  port.postMessage(THREAD_READY);
}

/**
 * On Linux a nice value belongs to each thread, and `/proc/thread-self` names this thread's id.
 * Raising one's own nice value needs no privilege. Elsewhere the thread keeps the process's.
 */
function lowerThisThread(niceness: number): void {
  let tid: number;
  try {
    tid = Number(path.basename(fs.readlinkSync("/proc/thread-self")));
  } catch {
    return;
  }
  os.setPriority(tid, Math.min(19, os.getPriority(tid) + niceness));
}

/** One thread per core beyond the first (which serves the event loop), at least one, at most four. */
function defaultThreads(): number {
  return Math.max(1, Math.min(4, os.availableParallelism() - 1));
}
