import { CaseStarter } from "./modules/engine/index.js";
import { featureModules } from "./modules/index.js";
import { webhookDeliveryHandlers } from "./modules/webhooks/index.js";
import type { AppContext } from "./platform/context.js";
import { WorkerHeartbeat } from "./platform/heartbeat.js";
import { JobWorker, type WorkerOptions } from "./platform/jobs.js";

/**
 * The general worker, which also starts and stops a second worker of its own for webhook
 * delivery: attempts wait on partners' endpoints (up to their timeout), so they get their own
 * slots (CDS_WEBHOOK_CONCURRENCY) instead of taking the ones workflow steps need. Beside them,
 * the engine's case starter runs new cases, which need no job (decision 0011).
 */
class ServiceWorker extends JobWorker {
  private readonly starter: CaseStarter;
  readonly #heartbeat: WorkerHeartbeat;

  constructor(
    ctx: AppContext,
    options: WorkerOptions,
    private readonly deliveries: JobWorker,
  ) {
    super(
      ctx.db,
      featureModules.flatMap((m) => m.jobs?.(ctx) ?? []),
      options,
    );
    this.starter = new CaseStarter(ctx);
    this.#heartbeat = new WorkerHeartbeat(ctx.db, this.id, ctx.log);
  }

  override get runningCount(): number {
    return super.runningCount + this.deliveries.runningCount;
  }

  override async start(): Promise<void> {
    await super.start();
    await this.deliveries.start();
    await this.starter.start();
    await this.#heartbeat.start();
  }

  override async stop(): Promise<void> {
    await this.#heartbeat.stop();
    await Promise.all([super.stop(), this.deliveries.stop(), this.starter.stop()]);
  }
}

/** Starts a job worker running every feature's jobs, configured from the context. */
export async function startWorker(ctx: AppContext, options: Partial<WorkerOptions> = {}): Promise<JobWorker> {
  const base: WorkerOptions = {
    concurrency: ctx.config.workerConcurrency,
    leaseSeconds: ctx.config.jobLeaseSeconds,
    pollMs: ctx.config.jobPollMs,
    logger: ctx.log,
    ...options,
  };
  const deliveries = new JobWorker(ctx.db, webhookDeliveryHandlers(ctx), {
    ...base,
    concurrency: ctx.config.webhookConcurrency,
    ...(options.workerId ? { workerId: `${options.workerId}/webhooks` } : {}),
  });
  const worker = new ServiceWorker(ctx, base, deliveries);
  await worker.start();
  return worker;
}
