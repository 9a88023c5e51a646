import { sql } from "kysely";
import { orderedUuid, uuid } from "../../platform/crypto.js";
import type { Executor } from "../../platform/db/index.js";

/** NOTIFY channel that wakes the delivery workers when pending deliveries commit. */
export const DELIVERIES_CHANNEL = "cds_webhook_deliveries";

/** Wakes the delivery workers once the caller's transaction commits. */
export const notifyDeliveries = sql<string>`pg_notify(${DELIVERIES_CHANNEL}, '')`;

/** The configuration an event without a webhook key goes to. */
export const DEFAULT_WEBHOOK_KEY = "default";

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

/** The delivery rows, due at once, in the caller's transaction. */
export async function queueDeliveries(tx: Executor, deliveries: NewDelivery[]): Promise<QueuedDelivery[]> {
  if (deliveries.length === 0) return [];
  const rows = deliveries.map((d) => {
    const id = orderedUuid();
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
  await sql`SELECT ${notifyDeliveries}`.execute(tx);
  return rows.map((r) => ({ deliveryId: r.id, webhookId: r.webhook_id }));
}
