import { featureModules } from "./modules/index.js";
import type { BackgroundWorker } from "./platform/app-types.js";
import type { AppContext } from "./platform/context.js";
import { WorkerHeartbeat } from "./platform/heartbeat.js";
import { JobWorker, type WorkerOptions } from "./platform/jobs.js";

/**
 * The general worker, running every feature's jobs, with what features run beside it in worker
 * processes: webhook delivery on slots of its own (attempts wait on partners' endpoints, and must
 * not take the ones workflow steps need), the engine's case starter (new cases need no job,
 * decision 0011).
 */
class ServiceWorker extends JobWorker {
  readonly #background: BackgroundWorker[];
  readonly #heartbeat: WorkerHeartbeat;

  constructor(ctx: AppContext, options: WorkerOptions) {
    super(
      ctx.db,
      featureModules.flatMap((m) => m.jobs?.(ctx) ?? []),
      options,
    );
    this.#background = featureModules.flatMap((m) => m.background?.(ctx, options) ?? []);
    this.#heartbeat = new WorkerHeartbeat(ctx.db, this.id, ctx.log);
  }

  override get runningCount(): number {
    return this.#background.reduce((n, b) => n + (b.runningCount ?? 0), super.runningCount);
  }

  override async start(): Promise<void> {
    await Promise.all(this.#background.map((b) => b.prepare?.()));
    await super.start();
    for (const b of this.#background) await b.start();
    await this.#heartbeat.start();
  }

  override async stop(): Promise<void> {
    // Every part stops taking work at once (each marks itself stopped before its first await):
    // a part told to stop only after a statement of the heartbeat's would go on taking work
    // while that statement waits for a connection. The heartbeat's row goes once they have
    // stopped, since until then this worker still runs.
    await Promise.all([super.stop(), ...this.#background.map((b) => b.stop())]);
    await this.#heartbeat.stop();
  }
}

/** Starts a job worker running every feature's jobs, configured from the context. */
export async function startWorker(ctx: AppContext, options: Partial<WorkerOptions> = {}): Promise<JobWorker> {
  const worker = new ServiceWorker(ctx, {
    concurrency: ctx.config.workerConcurrency,
    leaseSeconds: ctx.config.jobLeaseSeconds,
    pollMs: ctx.config.jobPollMs,
    logger: ctx.log,
    ...options,
  });
  await worker.start();
  return worker;
}
