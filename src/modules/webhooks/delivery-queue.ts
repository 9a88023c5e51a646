import { uuid } from "../../platform/crypto.js";
import type { Executor } from "../../platform/db/index.js";
import { enqueue } from "../../platform/jobs.js";

/** The job that makes one attempt of one delivery (its retries are the same job, rescheduled). */
export const DELIVERY_JOB = "webhooks.deliver";

/** The configuration an event without a webhook key goes to. */
export const DEFAULT_WEBHOOK_KEY = "default";

/** Carries what the delivery worker needs to pick a concurrency lane before reading anything. */
export interface DeliveryJobPayload {
  deliveryId: string;
  tenantId: string;
  webhookKey: string;
}

export interface NewDelivery {
  tenantId: string;
  eventId: string;
  caseId: string | null;
  eventType: string;
  webhookKey: string;
  /** The event's fields without `webhookId`. */
  payload: Record<string, unknown>;
  redeliveryOf?: string;
}

export interface QueuedDelivery {
  deliveryId: string;
  webhookId: string;
}

/**
 * The bytes every attempt of a delivery sends: `webhookId` first, then the event's fields in
 * the order they were given. Serialized once, here, and stored.
 */
export function serializeBody(webhookId: string, payload: Record<string, unknown>): string {
  const { webhookId: _replaced, ...fields } = payload;
  return JSON.stringify({ webhookId, ...fields });
}

/** The delivery rows and their jobs, in the caller's transaction. */
export async function queueDeliveries(tx: Executor, deliveries: NewDelivery[]): Promise<QueuedDelivery[]> {
  if (deliveries.length === 0) return [];
  const rows = deliveries.map((d) => {
    const id = uuid();
    const webhookId = uuid();
    return {
      id,
      tenant_id: d.tenantId,
      event_id: d.eventId,
      case_id: d.caseId,
      event_type: d.eventType,
      webhook_key: d.webhookKey,
      webhook_id: webhookId,
      body: serializeBody(webhookId, d.payload),
      redelivery_of: d.redeliveryOf ?? null,
    };
  });
  await tx.insertInto("webhook_deliveries").values(rows).execute();
  await enqueue(tx, ...rows.map((r) => deliveryJob(r.id, r.tenant_id, r.webhook_key)));
  return rows.map((r) => ({ deliveryId: r.id, webhookId: r.webhook_id }));
}

export function deliveryJob(deliveryId: string, tenantId: string, webhookKey: string) {
  const payload: DeliveryJobPayload = { deliveryId, tenantId, webhookKey };
  return { kind: DELIVERY_JOB, payload };
}
