import type { AppContext } from "../../platform/context.js";
import type { Executor, Tx } from "../../platform/db/index.js";
import { enqueue, type JobHandler, RescheduleJob } from "../../platform/jobs.js";
import { type ResumeResult, resumeWait } from "../engine/index.js";
import { RFI_WAIT } from "./rfi.limits.js";
import { closeRequest, findRequest, type RfiRow } from "./rfi.repo.js";

export const EXPIRE_RFI_JOB = "rfi.expire";

interface ExpirePayload {
  tenantId: string;
  caseId: string;
  rfiId: string;
}

/** Schedules the request's expiry at its deadline, in the transaction that raised it. */
export async function scheduleExpiry(tx: Executor, row: RfiRow): Promise<void> {
  if (!row.expires_at) return;
  await enqueue(tx, {
    kind: EXPIRE_RFI_JOB,
    payload: { tenantId: row.tenant_id, caseId: row.case_id, rfiId: row.id } satisfies ExpirePayload,
    runAt: row.expires_at,
    jobKey: `${EXPIRE_RFI_JOB}:${row.id}`,
  });
}

/**
 * Continues a workflow node waiting on a request that closed without an answer (`onExpired`,
 * `onCancelled`), in the transaction that closed it.
 */
export function resumeClosedRequest(
  ctx: AppContext,
  tx: Tx,
  request: ExpirePayload,
  status: "expired" | "cancelled",
): Promise<ResumeResult> {
  const { tenantId, caseId, rfiId } = request;
  return resumeWait(
    ctx,
    tx,
    { tenantId, caseId, kind: RFI_WAIT, ref: rfiId },
    { kind: status, output: { status, fields: {}, documents: [] } },
  );
}

/**
 * At the deadline a request still pending becomes `expired`, and a workflow node waiting on it
 * continues (`onExpired`) — in one transaction with the job's completion, so exactly once. A
 * request answered or cancelled in the meantime is left alone.
 */
export function rfiJobs(ctx: AppContext): JobHandler[] {
  const expire: JobHandler<ExpirePayload> = {
    kind: EXPIRE_RFI_JOB,
    mode: "transaction",
    async run(job, tx) {
      const { tenantId, caseId, rfiId } = job.payload;
      const row = await findRequest(tx, tenantId, caseId, rfiId, true);
      if (row?.status !== "pending" || !row.expires_at) return;
      const early = row.expires_at.getTime() - Date.now();
      // The claim compares with the database's clock; allow this process's clock a little skew.
      if (early > 1000) throw new RescheduleJob(early);
      const expired = await closeRequest(tx, tenantId, rfiId, { status: "expired" });
      if (!expired) return;
      await resumeClosedRequest(ctx, tx, { tenantId, caseId, rfiId }, "expired");
    },
  };
  return [expire];
}
