import { featureModules } from "./modules/index.js";
import type { AppContext } from "./platform/context.js";
import { JobWorker, type WorkerOptions } from "./platform/jobs.js";

/** Starts a job worker running every feature's jobs, configured from the context. */
export async function startWorker(ctx: AppContext, options: Partial<WorkerOptions> = {}): Promise<JobWorker> {
  const handlers = featureModules.flatMap((m) => m.jobs?.(ctx) ?? []);
  const worker = new JobWorker(ctx.db, handlers, {
    concurrency: ctx.config.workerConcurrency,
    leaseSeconds: ctx.config.jobLeaseSeconds,
    pollMs: ctx.config.jobPollMs,
    logger: ctx.log,
    ...options,
  });
  await worker.start();
  return worker;
}
