import { sql } from "kysely";
import { uuid } from "../../platform/crypto.js";
import type { Executor } from "../../platform/db/index.js";
import { notifyJobs } from "../../platform/jobs.js";
import { DEFAULT_WEBHOOK_KEY, deliveryJob, serializeBody } from "../webhooks/delivery-queue.js";

/** The event types of the spec's Events section. */
export const EVENT_TYPES = [
  "case.decided",
  "case.pending_review",
  "case.decision_overridden",
  "external_callback.dispatch",
  "node.notification",
  "case.rfi_requested",
  "case.rfi_answered",
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
 * other but never delivered: a partner's systems must not act on a case nobody submitted.
 */
export async function emitEvent(tx: Executor, event: NewEvent): Promise<string> {
  const id = uuid();
  const deliveryId = uuid();
  const webhookId = uuid();
  const webhookKey = event.webhookKey ?? DEFAULT_WEBHOOK_KEY;
  const job = deliveryJob(deliveryId, event.tenantId, webhookKey);
  const delivered =
    event.caseId === null
      ? sql<boolean>`true`
      : sql<boolean>`NOT EXISTS (SELECT 1 FROM cases WHERE id = ${event.caseId} AND dry_run)`;
  // One statement for the event, its delivery and the delivery's job, with the NOTIFY that wakes
  // the workers on commit. Events are the service's most frequent write: one round trip, not three.
  await tx
    .with("event", (db) =>
      db.insertInto("events").values({
        id,
        tenant_id: event.tenantId,
        case_id: event.caseId,
        event_type: event.type,
        webhook_key: event.webhookKey,
        payload: JSON.stringify(event.payload),
      }),
    )
    .with("delivery", (db) =>
      db
        .insertInto("webhook_deliveries")
        .columns([
          "id",
          "tenant_id",
          "event_id",
          "case_id",
          "event_type",
          "webhook_key",
          "webhook_id",
          "body",
        ])
        .expression(
          db
            .selectNoFrom([
              sql<string>`${deliveryId}::uuid`.as("id"),
              sql<string>`${event.tenantId}::uuid`.as("tenant_id"),
              sql<string>`${id}::uuid`.as("event_id"),
              sql<string | null>`${event.caseId}::uuid`.as("case_id"),
              sql<string>`${event.type}`.as("event_type"),
              sql<string>`${webhookKey}`.as("webhook_key"),
              sql<string>`${webhookId}::uuid`.as("webhook_id"),
              sql<string>`${serializeBody(webhookId, event.payload)}`.as("body"),
            ])
            .where(delivered),
        )
        .returning("id"),
    )
    .with("job", (db) =>
      db
        .insertInto("jobs")
        .columns(["kind", "payload"])
        .expression(
          db
            .selectFrom("delivery")
            .select([
              sql<string>`${job.kind}`.as("kind"),
              sql<string>`${JSON.stringify(job.payload)}::jsonb`.as("payload"),
            ]),
        )
        .returning("kind"),
    )
    .selectFrom("job")
    .select(notifyJobs.as("notified"))
    .execute();
  return id;
}
