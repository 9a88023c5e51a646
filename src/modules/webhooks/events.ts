import { sql } from "kysely";
import { uuid } from "../../platform/crypto.js";
import type { Executor } from "../../platform/db/index.js";
import { notifyJobs } from "../../platform/jobs.js";
import { DEFAULT_WEBHOOK_KEY, deliveryJob, serializeBody } from "./delivery-queue.js";

/**
 * The event types of the spec's Events section, `case.failed` (contract section 2) and
 * `webhook.test` (the console's "send a test event").
 */
export const EVENT_TYPES = [
  "case.decided",
  "case.pending_review",
  "case.decision_overridden",
  "external_callback.dispatch",
  "node.notification",
  "case.rfi_requested",
  "case.rfi_answered",
  "case.failed",
  "webhook.test",
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

export interface NewEvent {
  tenantId: string;
  caseId: string | null;
  type: EventType;
  /** The named webhook configuration to deliver to; null for the tenant's default. */
  webhookKey: string | null;
  /**
   * The event's fields exactly as the spec names them, without `webhookId`: every delivery
   * (first send, retries, a manual redelivery) is serialized from this with its own webhookId.
   */
  payload: Record<string, unknown>;
}

/**
 * Writes an event to the outbox in the caller's transaction, together with its first webhook
 * delivery (body serialized, webhookId chosen) and the job that sends it: a change that commits
 * always has its event and its delivery, a change that rolls back has neither.
 *
 * Events of a dry-run case (an operator's trial of a workflow version) are recorded like any
 * other but never delivered: a partner's systems must not act on a case nobody submitted. An
 * event whose webhook configuration does not exist is recorded as a failed delivery naming it
 * (an operator can redeliver it once it exists), with no job and no attempt: most tenants of a
 * busy service have none, and their events must not cost a delivery's round of row updates.
 */
export async function emitEvent(tx: Executor, event: NewEvent): Promise<string> {
  const [id] = await emitEvents(tx, [event]);
  return id as string;
}

/**
 * `emitEvent` for many events in one statement (events, deliveries, jobs and the NOTIFY that
 * wakes the delivery worker on commit): events are the service's most frequent write.
 */
export async function emitEvents(tx: Executor, events: NewEvent[]): Promise<string[]> {
  if (events.length === 0) return [];
  const rows = events.map((event) => {
    const webhookId = uuid();
    const deliveryId = uuid();
    const webhookKey = event.webhookKey ?? DEFAULT_WEBHOOK_KEY;
    return {
      id: uuid(),
      event,
      deliveryId,
      webhookId,
      webhookKey,
      body: serializeBody(webhookId, event.payload),
      job: deliveryJob(deliveryId, event.tenantId, webhookKey),
    };
  });
  const eventValues = sql.join(
    rows.map(
      (r) =>
        sql`(${r.id}::uuid, ${r.event.tenantId}::uuid, ${r.event.caseId}::uuid, ${r.event.type}, ${r.event.webhookKey}, ${JSON.stringify(r.event.payload)}::jsonb)`,
    ),
  );
  const deliveryValues = sql.join(
    rows.map(
      (r) =>
        sql`(${r.deliveryId}::uuid, ${r.event.tenantId}::uuid, ${r.id}::uuid, ${r.event.caseId}::uuid, ${r.event.type}, ${r.webhookKey}, ${r.webhookId}::uuid, ${r.body}, ${r.job.kind}, ${JSON.stringify(r.job.payload)}::jsonb)`,
    ),
  );
  await sql`
    WITH event AS (
      INSERT INTO events (id, tenant_id, case_id, event_type, webhook_key, payload)
      VALUES ${eventValues}
    ),
    d AS (
      SELECT * FROM (VALUES ${deliveryValues})
        AS d(id, tenant_id, event_id, case_id, event_type, webhook_key, webhook_id, body, job_kind, job_payload)
      WHERE d.case_id IS NULL
         OR NOT EXISTS (SELECT 1 FROM cases c WHERE c.id = d.case_id AND c.dry_run)
    ),
    routed AS (
      SELECT d.*, EXISTS (
        SELECT 1 FROM webhook_configs c WHERE c.tenant_id = d.tenant_id AND c.webhook_key = d.webhook_key
      ) AS configured
      FROM d
    ),
    delivery AS (
      INSERT INTO webhook_deliveries
        (id, tenant_id, event_id, case_id, event_type, webhook_key, webhook_id, body, status, last_error, completed_at)
      SELECT id, tenant_id, event_id, case_id, event_type, webhook_key, webhook_id, body,
             CASE WHEN configured THEN 'pending' ELSE 'failed' END,
             CASE WHEN configured THEN NULL
                  ELSE 'no webhook configuration "' || webhook_key || '" exists for this tenant' END,
             CASE WHEN configured THEN NULL ELSE now() END
      FROM routed
      RETURNING id
    ),
    job AS (
      INSERT INTO jobs (kind, payload)
      SELECT r.job_kind, r.job_payload FROM routed r JOIN delivery ON delivery.id = r.id WHERE r.configured
      RETURNING kind
    )
    SELECT ${notifyJobs} FROM (SELECT DISTINCT kind FROM job) AS kinds`.execute(tx);
  return rows.map((r) => r.id);
}
