import os from "node:os";
import { Worker } from "node:worker_threads";

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
 * A few worker threads (node:worker_threads) that run one task each at a time, each task with a
 * wall-clock deadline counted from when a thread takes it: past it the thread is terminated,
 * which interrupts even a single long synchronous call, and the task fails with
 * `DeadlineExceeded`. Tasks wait in order for a free thread. The script first posts
 * `THREAD_READY` (loading it is not the task's time), then answers each message with one
 * message. Threads are unreferenced: an idle pool never keeps a process alive.
 *
 * Run from TypeScript sources (development and tests), the script is a `.ts` file and its
 * thread loads it through tsx, as the process does; from `dist/`, it is plain JavaScript.
 */
export class ThreadPool<T, R> {
  readonly #slots: Slot[] = [];
  readonly #queue: Queued<T, R>[] = [];
  #closed = false;

  constructor(
    private readonly script: URL,
    private readonly size = defaultThreads(),
  ) {}

  run(task: T, deadlineMs: number): Promise<R> {
    if (this.#closed) return Promise.reject(new Error("the thread pool is closed"));
    return new Promise<R>((resolve, reject) => {
      this.#queue.push({ task, deadlineMs, resolve, reject });
      this.#drain();
    });
  }

  /** Ends every thread; tasks still waiting fail. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const q of this.#queue.splice(0)) q.reject(new Error("the thread pool is closed"));
    await Promise.all(this.#slots.splice(0).map((s) => s.worker.terminate()));
  }

  #drain(): void {
    while (this.#queue.length > 0) {
      const slot = this.#slots.find((s) => s.state === "free");
      if (!slot) {
        const starting = this.#slots.filter((s) => s.state === "starting").length;
        if (this.#slots.length < this.size && starting < this.#queue.length) this.#spawn();
        return;
      }
      this.#start(slot, this.#queue.shift() as Queued<T, R>);
    }
  }

  #spawn(): void {
    // A thread that runs out of memory ends alone, with an error, rather than the process.
    const options = { resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB } };
    const worker = this.script.pathname.endsWith(".ts")
      ? // Loader hooks given with --import do not reach a worker's own entry on Node 20: the
        // thread registers tsx itself, then imports the script.
        new Worker(
          `import(${JSON.stringify(import.meta.resolve("tsx/esm/api"))})` +
            `.then((tsx) => { tsx.register(); return import(${JSON.stringify(this.script.href)}); })`,
          { ...options, eval: true },
        )
      : new Worker(this.script, options);
    worker.unref();
    const slot: Slot = { worker, state: "starting" };
    this.#slots.push(slot);
    const lost = (err: unknown) => {
      this.#remove(slot);
      // A thread that cannot even start fails what waits, rather than respawning forever.
      for (const q of this.#queue.splice(0)) q.reject(err);
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
    const settle = () => {
      clearTimeout(timer);
      worker.off("message", onMessage);
      worker.off("error", onError);
      worker.off("exit", onExit);
    };
    const onMessage = (result: R) => {
      settle();
      slot.state = "free";
      job.resolve(result);
      this.#drain();
    };
    const onError = (err: unknown) => {
      settle();
      this.#remove(slot);
      job.reject(err);
      this.#drain();
    };
    const onExit = (code: number) => onError(new Error(`an evaluation thread exited with code ${code}`));
    const timer = setTimeout(() => {
      settle();
      this.#remove(slot);
      job.reject(new DeadlineExceeded(job.deadlineMs));
      this.#drain();
    }, job.deadlineMs);
    worker.on("message", onMessage);
    worker.on("error", onError);
    worker.on("exit", onExit);
    worker.postMessage(job.task);
  }
}

/** One thread per core beyond the first (which serves the event loop), at least one, at most four. */
function defaultThreads(): number {
  return Math.max(1, Math.min(4, os.availableParallelism() - 1));
}
