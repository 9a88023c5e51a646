import type { AppContext } from "../../platform/context.js";
import type { Executor } from "../../platform/db/index.js";
import { enqueue, type PlainJobHandler } from "../../platform/jobs.js";
import { brokerOf } from "./brokers/index.js";
import { requireOpenedConfig } from "./provider-configs.service.js";
import { findRun } from "./providers.repo.js";
import { openSession, runViewOf } from "./providers.service.js";
import { applyVerdict } from "./vendor-events.service.js";
import { VendorError } from "./vendor-http.js";

/**
 * A vendor's event can be lost (a misconfigured webhook URL, an outage on either side). Shortly
 * before a paused run expires, a broker that can be asked (`poll`) is asked once for the result;
 * what it reports is applied exactly as an event would be. The call is made with no transaction
 * open; a vendor that cannot answer leaves the run to its timeout.
 */
export const VENDOR_POLL_JOB = "providers.vendor-poll";

export interface VendorPollJob {
  tenantId: string;
  runId: string;
}

/** When a run pausing until `expiresAt` is polled: at nine tenths of its pause, at least a second before it ends. */
export function pollTime(start: Date, expiresAt: Date): Date {
  const span = expiresAt.getTime() - start.getTime();
  return new Date(start.getTime() + Math.max(0, Math.min(span * 0.9, span - 1000)));
}

export async function schedulePoll(tx: Executor, job: VendorPollJob, at: Date): Promise<void> {
  await enqueue(tx, { kind: VENDOR_POLL_JOB, payload: job, runAt: at, jobKey: `vendor-poll:${job.runId}` });
}

export function vendorPollHandler(ctx: AppContext): PlainJobHandler<VendorPollJob> {
  return {
    kind: VENDOR_POLL_JOB,
    mode: "plain",
    async run(job) {
      const { tenantId, runId } = job.payload;
      const run = await findRun(ctx.db.root, tenantId, runId);
      if (run?.status !== "waiting") return;
      const broker = brokerOf(run.broker_id);
      if (!broker?.poll) return;
      let verdict: Awaited<ReturnType<NonNullable<typeof broker.poll>>>;
      try {
        const config = await requireOpenedConfig(ctx, tenantId, broker.id);
        const session = openSession(ctx, tenantId, broker, config, {
          brokerId: broker.id,
          caseId: run.case_id,
          runId: run.id,
          actor: "system",
        });
        verdict = await broker.poll(session.call, runViewOf(broker, run));
      } catch (err) {
        if (!(err instanceof VendorError)) throw err;
        ctx.log.warn(
          { tenantId, runId, brokerId: broker.id },
          "polling the vendor failed; the run waits for its timeout",
        );
        return;
      }
      if (!verdict || verdict.kind === "ignore") return;
      const outcome = await ctx.db.transaction(async (tx) => {
        const current = await findRun(tx, tenantId, runId);
        if (current?.status !== "waiting") return "ignored: the run no longer waits";
        return applyVerdict(ctx, tx, current, verdict, current.last_event_at);
      });
      ctx.log.info({ tenantId, runId, brokerId: broker.id, outcome }, "vendor polled");
    },
  };
}
