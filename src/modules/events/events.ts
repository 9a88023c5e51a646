import { uuid } from "../../platform/crypto.js";
import type { Executor } from "../../platform/db/index.js";
import { enqueue } from "../../platform/jobs.js";

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

/** The job that turns an outbox event into a webhook delivery. */
export const DELIVER_EVENT_JOB = "webhooks.deliver-event";

/**
 * Writes an event to the outbox in the caller's transaction, with the job that delivers it:
 * a change that commits always has its event, a change that rolls back never does.
 */
export async function emitEvent(tx: Executor, event: NewEvent): Promise<string> {
  const id = uuid();
  await tx
    .insertInto("events")
    .values({
      id,
      tenant_id: event.tenantId,
      case_id: event.caseId,
      event_type: event.type,
      webhook_key: event.webhookKey,
      payload: JSON.stringify(event.payload),
    })
    .execute();
  await enqueue(tx, { kind: DELIVER_EVENT_JOB, payload: { eventId: id } });
  return id;
}
