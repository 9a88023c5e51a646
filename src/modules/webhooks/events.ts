import { type RawBuilder, sql } from "kysely";
import { orderedUuid, uuid } from "../../platform/crypto.js";
import { type Executor, transactionOf } from "../../platform/db/index.js";
import { configOf } from "./deliveries.repo.js";
import { handedAttempt, takerOf } from "./delivery-handoff.js";
import { DEFAULT_WEBHOOK_KEY, notifyDeliveries, serializeBody } from "./delivery-queue.js";

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
   * The event belongs to a dry run (an operator's trial of a workflow version): it is recorded
   * like any other but never delivered, since a partner's systems must not act on a case nobody
   * submitted.
   */
  dryRun: boolean;
  /**
   * The event's fields exactly as the spec names them, without `webhookId`: every delivery
   * (first send, retries, a manual redelivery) is serialized from this with its own webhookId.
   */
  payload: Record<string, unknown>;
}

/**
 * Writes an event in the caller's transaction as its delivery (body serialized, webhookId chosen,
 * due at once): a change that commits always has its event and its delivery, a change that rolls
 * back has neither. The delivery row is its own queue entry (decision 0007) and the event's one
 * record (decision 0034: the `events` view shows it); the statement wakes the delivery workers on
 * commit.
 *
 * Events of a dry run get no delivery: they are recorded in `recorded_events`. An event whose
 * webhook configuration does not exist is recorded as a failed delivery naming it (an operator can
 * redeliver it once it exists), with no attempt: most tenants of a busy service have none, and
 * their events must not cost a delivery's round of row updates.
 */
export async function emitEvent(tx: Executor, event: NewEvent): Promise<string> {
  const [id] = await emitEvents(tx, [event]);
  return id as string;
}

/** `emitEvent` for many events in one statement: events are the service's most frequent write. */
export async function emitEvents(tx: Executor, events: NewEvent[]): Promise<string[]> {
  if (events.length === 0) return [];
  const write = eventsWrite(tx, events);
  let value: unknown;
  try {
    const { rows } = await sql<{ handed: unknown }>`
      WITH ${sql.join(write.ctes)} SELECT ${write.handed} AS handed`.execute(tx);
    value = rows[0]?.handed;
  } catch (err) {
    write.failed();
    throw err;
  }
  return write.done(value);
}

/**
 * Events written by a statement of the caller's (the engine writes a batch's steps, states and
 * events in one): the statement's common table expressions, a column it selects, and what to do
 * with that column's value once it has run, or when it failed.
 */
export interface EventsWrite {
  /** `name AS (…)` clauses for the statement's WITH, in order. */
  ctes: RawBuilder<unknown>[];
  /** A scalar the statement selects: the deliveries handed to this process's worker, as JSON. */
  handed: RawBuilder<unknown>;
  /** The statement ran; `value` is what it selected as `handed`. Returns the events' ids. */
  done(value: unknown): string[];
  /** The statement failed or was never run: what was reserved for it is given back. */
  failed(): void;
}

/** `emitEvents`, as a part of the caller's statement (see EventsWrite). */
export function eventsWrite(tx: Executor, events: NewEvent[]): EventsWrite {
  const rows = events.map((event) => ({ id: orderedUuid(), event }));
  const ids = rows.map((r) => r.id);
  const recorded = rows.filter((r) => r.event.dryRun);
  const recordedCte = sql`recorded AS (
    INSERT INTO recorded_events (id, tenant_id, case_id, event_type, webhook_key, payload)
    VALUES ${sql.join(
      recorded.map(
        (r) =>
          sql`(${r.id}::uuid, ${r.event.tenantId}::uuid, ${r.event.caseId}::uuid, ${r.event.type}, ${r.event.webhookKey}, ${JSON.stringify(r.event.payload)}::jsonb)`,
      ),
    )}
  )`;
  const delivered = rows
    .filter((r) => !r.event.dryRun)
    .map((r) => {
      const webhookId = uuid();
      // One object literal, not a spread of `r` (decision 0038).
      return {
        id: r.id,
        event: r.event,
        deliveryId: orderedUuid(),
        webhookId,
        webhookKey: r.event.webhookKey ?? DEFAULT_WEBHOOK_KEY,
        body: serializeBody(webhookId, r.event.payload),
      };
    });
  if (delivered.length === 0) {
    return { ctes: [recordedCte], handed: sql`NULL::json`, done: () => ids, failed: () => {} };
  }
  // As many as this process's delivery worker takes go in leased to it, handed over on commit.
  const open = transactionOf(tx);
  const taker = open && takerOf(open.db);
  const hand =
    taker?.reserve(delivered.map((r) => ({ tenantId: r.event.tenantId, webhookKey: r.webhookKey }))) ?? [];
  const reserved = delivered.flatMap((r, i) =>
    hand[i] === "take" ? [{ tenantId: r.event.tenantId, webhookKey: r.webhookKey }] : [],
  );
  // A delivery nobody took wakes the workers (NOTIFY), unless the only worker said it would claim it.
  const deliveryValues = sql.join(
    delivered.map(
      (r, i) =>
        sql`(${r.deliveryId}::uuid, ${r.event.tenantId}::uuid, ${r.id}::uuid, ${r.event.caseId}::uuid, ${r.event.type}, ${r.webhookKey}, ${r.webhookId}::uuid, ${r.body}, ${hand[i] === "take"}::bool, ${hand[i] !== "take" && hand[i] !== "later"}::bool)`,
    ),
  );
  const ctes = [
    ...(recorded.length > 0 ? [recordedCte] : []),
    sql`routed AS (
      SELECT d.*, c.url, c.secrets, c.secrets_sealed, c.active_secret_id, c.max_attempts, c.timeout_ms,
             c.url IS NOT NULL AS configured
      FROM (VALUES ${deliveryValues}) AS d (id, tenant_id, event_id, case_id, event_type, webhook_key, webhook_id, body, hand, wake)
      LEFT JOIN webhook_configs c ON c.tenant_id = d.tenant_id AND c.webhook_key = d.webhook_key
    )`,
    sql`delivery AS (
      INSERT INTO webhook_deliveries
        (id, tenant_id, event_id, case_id, event_type, webhook_key, webhook_id, body, status, last_error,
         completed_at, next_attempt_at, handed_until)
      SELECT id, tenant_id, event_id, case_id, event_type, webhook_key, webhook_id, body,
             CASE WHEN configured THEN 'pending' ELSE 'failed' END,
             CASE WHEN configured THEN NULL
                  ELSE 'no webhook configuration "' || webhook_key || '" exists for this tenant' END,
             CASE WHEN configured THEN NULL ELSE now() END,
             CASE WHEN configured THEN now() END,
             CASE WHEN configured AND hand THEN now() + ${taker?.leaseSeconds ?? 0} * interval '1 second' END
      FROM routed
    )`,
    sql`woken AS (
      SELECT count(*) FROM (
        SELECT ${notifyDeliveries} WHERE EXISTS (SELECT 1 FROM routed WHERE configured AND wake)
      ) n
    )`,
  ];
  // Selecting from `woken` is what runs its NOTIFY (a CTE that only reads runs when read). Its one
  // row joined with the configured deliveries handed over, and those the only worker said it would
  // claim later: a row of nulls when there are none.
  const handed = sql`(
    SELECT json_agg(json_build_object('id', h.id, 'tenant_id', h.tenant_id, 'webhook_key', h.webhook_key,
             'url', h.url, 'secrets', h.secrets, 'secrets_sealed', h.secrets_sealed,
             'active_secret_id', h.active_secret_id, 'max_attempts', h.max_attempts,
             'timeout_ms', h.timeout_ms, 'hand', h.hand))
    FROM woken LEFT JOIN routed h ON h.configured AND (h.hand OR NOT h.wake)
  )`;
  const failed = () => {
    if (reserved.length > 0) taker?.take([], reserved, []);
  };
  const done = (value: unknown): string[] => {
    const result = ((value ?? []) as Array<Record<string, unknown> | null>).filter(
      (row): row is Record<string, unknown> => row !== null && row.id !== null,
    );
    // The configured deliveries the worker said it would claim `later` (an unconfigured one has
    // failed already, and is nobody's to claim).
    const later = result
      .filter((row) => row.hand !== true)
      .map((row) => ({ tenantId: row.tenant_id as string, webhookKey: row.webhook_key as string }));
    if (open && taker && reserved.length + later.length > 0) {
      // The bodies this process serialized: not sent back by the statement.
      const bodies = new Map(delivered.map((r) => [r.deliveryId, r.body]));
      const handedOver = result
        .filter((row) => row.hand === true)
        .map((row) =>
          handedAttempt({
            id: row.id as string,
            tenant_id: row.tenant_id as string,
            webhook_key: row.webhook_key as string,
            body: bodies.get(row.id as string) as string,
            config: configOf(row),
          }),
        );
      open.onEnd((committed) => taker.take(committed ? handedOver : [], reserved, committed ? later : []));
    }
    return ids;
  };
  return { ctes, handed, done, failed };
}
