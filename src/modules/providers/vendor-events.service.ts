import type { AppContext } from "../../platform/context.js";
import { sha256, uuid } from "../../platform/crypto.js";
import type { Tx } from "../../platform/db/index.js";
import { AppError, badRequest, notFound } from "../../platform/errors.js";
import { enqueue } from "../../platform/jobs.js";
import { secretBoxOf } from "../../platform/secret-box.js";
import { resumeWait } from "../engine/index.js";
import type { Broker, EventVerdict, VendorEvent } from "./broker.js";
import { brokerOf } from "./brokers/index.js";
import { openConfig } from "./provider-configs.service.js";
import {
  RETRY_REQUESTED,
  type RetryRequest,
  VENDOR_RESULT,
  type VendorResultOutput,
} from "./provider-resolutions.js";
import {
  findEvent,
  findProviderConfigByInboundToken,
  insertEventOnce,
  listCallsOfRun,
  listWaitingRunsOfSubject,
  markEventHandled,
  type ProviderCallRow,
  type ProviderRunRow,
  updateRun,
} from "./providers.repo.js";
import { runViewOf, traceCall } from "./providers.service.js";

export const VENDOR_EVENT_JOB = "providers.vendor-event";

export interface VendorEventJob {
  tenantId: string;
  eventId: string;
}

/**
 * An event a vendor posted to a tenant's inbound webhook URL: verified against the
 * configuration's webhook secret (a bad digest is 401 and nothing is kept), stored once per body
 * (a vendor's retry of the same body is answered 200 and dropped), and handled by a job written
 * in the same transaction, so the answer to the vendor never waits on a workflow.
 */
export async function receiveVendorEvent(
  ctx: AppContext,
  brokerId: string,
  token: string,
  rawBody: Buffer | undefined,
  headers: Record<string, string | string[] | undefined>,
): Promise<{ received: true; duplicate: boolean }> {
  const broker = brokerOf(brokerId);
  const row = broker?.verifyEvent ? await findProviderConfigByInboundToken(ctx.db.root, token) : undefined;
  if (!broker?.verifyEvent || !broker.parseEvent || !row || row.broker_id !== brokerId) {
    throw notFound("inbound webhook URL");
  }
  const config = openConfig(secretBoxOf(ctx.config), row);
  const body = rawBody ?? Buffer.alloc(0);
  if (
    !config.webhookSecret ||
    !broker.verifyEvent({ rawBody: body, headers, secret: config.webhookSecret })
  ) {
    ctx.log.warn(
      { tenantId: row.tenant_id, brokerId },
      "vendor event refused: the payload digest does not match",
    );
    throw new AppError("unauthenticated", "the payload digest does not match");
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString("utf8"));
  } catch {
    throw badRequest("the body is not JSON");
  }
  const event = broker.parseEvent(parsed);
  if (!event) throw badRequest("the body is not an event this vendor sends");
  const eventId = uuid();
  const fresh = await ctx.db.transaction(async (tx) => {
    const stored = await insertEventOnce(tx, row.tenant_id, {
      id: eventId,
      brokerId,
      digest: sha256(body).toString("hex"),
      eventType: event.type,
      subjectRef: event.subjectRef,
      occurredAt: event.occurredAt,
      body: event.body,
    });
    if (stored) {
      await enqueue(tx, {
        kind: VENDOR_EVENT_JOB,
        payload: { tenantId: row.tenant_id, eventId } satisfies VendorEventJob,
        jobKey: `vendor-event:${eventId}`,
      });
    }
    return stored;
  });
  ctx.log.info(
    { tenantId: row.tenant_id, brokerId, eventType: event.type, duplicate: !fresh },
    "vendor event received",
  );
  return { received: true, duplicate: !fresh };
}

function callsForTrace(rows: ProviderCallRow[]) {
  return rows.map((r) =>
    traceCall({
      action: r.action,
      attempt: r.attempt,
      httpStatus: r.http_status,
      durationMs: r.duration_ms,
      outcome: r.outcome,
      error: r.error,
      actor: r.actor,
    }),
  );
}

/**
 * The job that handles a stored event: every run of the tenant waiting on the event's subject
 * (every open Sumsub wait of that applicant) is judged by its broker and resolved, told to keep
 * waiting, or left alone; an event older than the newest one a run applied is ignored (vendors
 * do not promise order). Each resolution goes through the engine's one resume path.
 */
export async function handleVendorEvent(ctx: AppContext, tx: Tx, job: VendorEventJob): Promise<void> {
  const stored = await findEvent(tx, job.tenantId, job.eventId);
  if (!stored || stored.handled_at) return;
  const broker = brokerOf(stored.broker_id);
  const event = broker?.parseEvent?.(stored.body);
  if (!broker?.judgeEvent || !event?.subjectRef) {
    await markEventHandled(tx, job.tenantId, job.eventId, "ignored: no subject to apply it to");
    return;
  }
  const runs = await listWaitingRunsOfSubject(tx, job.tenantId, broker.id, event.subjectRef);
  const outcomes: string[] = [];
  for (const run of runs) outcomes.push(`${run.id}: ${await apply(ctx, tx, run, event, broker)}`);
  await markEventHandled(
    tx,
    job.tenantId,
    job.eventId,
    outcomes.length === 0 ? "ignored: no run is waiting on its subject" : outcomes.join("; "),
  );
}

async function apply(
  ctx: AppContext,
  tx: Tx,
  run: ProviderRunRow,
  event: VendorEvent,
  broker: Broker,
): Promise<string> {
  if (event.occurredAt && run.last_event_at && event.occurredAt < run.last_event_at) {
    return "ignored: older than the last event applied";
  }
  if (!run.wait_id || !broker.judgeEvent) return "ignored: the run does not wait";
  const verdict = broker.judgeEvent(event, runViewOf(broker, run));
  if (verdict.kind === "ignore") return `ignored: ${verdict.reason}`;
  return applyVerdict(ctx, tx, run, verdict, event.occurredAt ?? run.last_event_at);
}

/**
 * What the vendor reported (by an event, or when polled) applied to one waiting run, through the
 * engine's one resume path: the node goes on with the result, or stays paused and says why.
 */
export async function applyVerdict(
  ctx: AppContext,
  tx: Tx,
  run: ProviderRunRow,
  verdict: Exclude<EventVerdict, { kind: "ignore" }>,
  lastEventAt: Date | null,
): Promise<string> {
  if (!run.wait_id) return "ignored: the run does not wait";
  const lookup = { tenantId: run.tenant_id, caseId: run.case_id, waitId: run.wait_id };
  const result =
    verdict.kind === "resolve"
      ? await resumeWait(ctx, tx, lookup, {
          kind: VENDOR_RESULT,
          output: {
            output: verdict.output,
            calls: callsForTrace(await listCallsOfRun(tx, run.tenant_id, run.id)),
          } satisfies VendorResultOutput,
        })
      : await resumeWait(ctx, tx, lookup, {
          kind: RETRY_REQUESTED,
          output: {
            tenantId: run.tenant_id,
            caseId: run.case_id,
            payloadType: verdict.payloadType,
            output: verdict.output,
          } satisfies RetryRequest,
        });
  switch (result.status) {
    case "resumed":
      await updateRun(tx, run.tenant_id, run.id, {
        status: "completed",
        output: verdict.kind === "resolve" ? verdict.output : null,
        lastEventAt,
      });
      return "resolved";
    case "kept_waiting":
      await updateRun(tx, run.tenant_id, run.id, { lastEventAt });
      return "retry requested";
    case "resolved":
      await updateRun(tx, run.tenant_id, run.id, {
        status: result.wait.resolution === "timeout" ? "timed_out" : "ended",
      });
      return `ignored: the wait had ended (${result.wait.resolution})`;
    default:
      await updateRun(tx, run.tenant_id, run.id, { status: "ended" });
      return `ignored: ${result.status}`;
  }
}
