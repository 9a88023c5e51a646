import { type Selectable, sql } from "kysely";
import { type Executor, findRow } from "../../platform/db/index.js";
import type {
  DeliveryStatus,
  WebhookAttemptsTable,
  WebhookDeliveriesTable,
  WebhookSecret,
} from "./webhooks.tables.js";

export type DeliveryRow = Selectable<WebhookDeliveriesTable>;
export type AttemptRow = Selectable<WebhookAttemptsTable>;

/** A delivery about to be attempted, with the configuration it is routed to (if it exists). */
export interface AttemptContext {
  id: string;
  tenant_id: string;
  webhook_key: string;
  body: string;
  /** The number of this attempt. */
  attempt_count: number;
  recorded_attempts: number;
  /** When the previous attempt started (an interrupted one is logged with this time). */
  prev_attempt_at: Date | null;
  config: {
    url: string;
    secrets: WebhookSecret[];
    secrets_sealed: boolean;
    active_secret_id: string | null;
    max_attempts: number;
    timeout_ms: number;
  } | null;
}

export interface AttemptKey {
  tenantId: string;
  deliveryId: string;
}

/**
 * Counts each attempt as started before anything is sent, so that an attempt cut short by a
 * crash still counts towards the maximum, and reads what the attempts need, all in one
 * statement for many deliveries. A delivery that is no longer pending (a duplicate run) has no
 * row in the answer.
 */
export async function startAttempts(db: Executor, keys: AttemptKey[]): Promise<Map<string, AttemptContext>> {
  const result = await sql<Omit<AttemptContext, "config"> & { url: string | null } & Record<string, unknown>>`
    WITH d AS (
      UPDATE webhook_deliveries
      SET attempt_count = attempt_count + 1, last_attempt_at = now(), next_attempt_at = NULL
      WHERE (tenant_id, id) IN (
        SELECT * FROM unnest(${keys.map((k) => k.tenantId)}::uuid[], ${keys.map((k) => k.deliveryId)}::uuid[])
      ) AND status = 'pending'
      RETURNING id, tenant_id, webhook_key, body, attempt_count, recorded_attempts
    )
    SELECT d.*, c.url, c.secrets, c.secrets_sealed, c.active_secret_id, c.max_attempts, c.timeout_ms,
      -- Read through the statement's snapshot: the value from before the update above.
      before.last_attempt_at AS prev_attempt_at
    FROM d
    JOIN webhook_deliveries before ON before.id = d.id
    LEFT JOIN webhook_configs c ON c.tenant_id = d.tenant_id AND c.webhook_key = d.webhook_key`.execute(db);
  const byId = new Map<string, AttemptContext>();
  for (const row of result.rows) {
    byId.set(row.id, {
      id: row.id,
      tenant_id: row.tenant_id,
      webhook_key: row.webhook_key,
      body: row.body,
      attempt_count: row.attempt_count,
      recorded_attempts: row.recorded_attempts,
      prev_attempt_at: row.prev_attempt_at,
      config:
        row.url === null
          ? null
          : {
              url: row.url,
              secrets: row.secrets as WebhookSecret[],
              secrets_sealed: row.secrets_sealed as boolean,
              active_secret_id: row.active_secret_id as string | null,
              max_attempts: row.max_attempts as number,
              timeout_ms: row.timeout_ms as number,
            },
    });
  }
  return byId;
}

export interface AttemptRecord {
  attempt: number;
  startedAt: Date;
  target: string | null;
  secretId: string | null;
  statusCode: number | null;
  latencyMs: number | null;
  error: string | null;
  responseBody: string | null;
}

export interface Outcome extends AttemptKey {
  /** The attempt number the caller started; the delivery row is only updated if still current. */
  attempt: number;
  status: DeliveryStatus;
  /** Attempts the delivery has really made (an attempt that was never sent is not one). */
  attemptCount: number;
  lastStatusCode: number | null;
  lastError: string | null;
  /** When status is pending: how long until the next attempt. */
  retryInMs: number | null;
  /** The log rows: this attempt's, and any the delivering process did not live to write. */
  attempts: AttemptRecord[];
}

/** Writes the attempts' log rows and the deliveries' new states, for many deliveries in one statement. */
export async function recordOutcomes(db: Executor, outcomes: Outcome[]): Promise<void> {
  const states = sql.join(
    outcomes.map(
      (o) =>
        sql`(${o.tenantId}::uuid, ${o.deliveryId}::uuid, ${o.attempt}::int, ${o.status}::text, ${o.attemptCount}::int,
             ${o.lastStatusCode}::int, ${o.lastError}::text, ${o.retryInMs}::int8)`,
    ),
  );
  const update = sql`
    UPDATE webhook_deliveries d
    SET status = v.status, attempt_count = v.attempt_count, recorded_attempts = v.attempt_count,
        last_status_code = v.last_status_code, last_error = v.last_error,
        next_attempt_at = CASE WHEN v.retry_ms IS NULL THEN NULL ELSE now() + v.retry_ms * interval '1 millisecond' END,
        completed_at = CASE WHEN v.status = 'pending' THEN NULL ELSE now() END
    FROM (VALUES ${states}) AS v (tenant_id, id, attempt, status, attempt_count, last_status_code, last_error, retry_ms)
    WHERE d.tenant_id = v.tenant_id AND d.id = v.id AND d.attempt_count = v.attempt`;
  const rows = outcomes.flatMap((o) =>
    o.attempts.map(
      (a) =>
        sql`(${o.deliveryId}::uuid, ${a.attempt}::int, ${o.tenantId}::uuid, ${a.startedAt}::timestamptz, ${a.target}::text,
             ${a.secretId}::text, ${a.statusCode}::int, ${a.latencyMs}::int, ${a.error}::text, ${a.responseBody}::text)`,
    ),
  );
  if (rows.length === 0) {
    await update.execute(db);
    return;
  }
  await sql`
    WITH updated AS (${update})
    INSERT INTO webhook_attempts
      (delivery_id, attempt, tenant_id, started_at, target, secret_id, status_code, latency_ms, error, response_body)
    VALUES ${sql.join(rows)}
    ON CONFLICT (delivery_id, attempt) DO NOTHING`.execute(db);
}

export interface DeliveryFilter {
  status?: DeliveryStatus;
  eventType?: string;
  caseId?: string;
  webhookKey?: string;
  /** Only deliveries older than this position (the paging cursor). */
  beforeSeq?: number;
}

/** A tenant's deliveries, newest first. */
export function listDeliveries(
  db: Executor,
  tenantId: string,
  filter: DeliveryFilter,
  limit: number,
): Promise<DeliveryRow[]> {
  let query = db.selectFrom("webhook_deliveries").selectAll().where("tenant_id", "=", tenantId);
  if (filter.status) query = query.where("status", "=", filter.status);
  if (filter.eventType) query = query.where("event_type", "=", filter.eventType);
  if (filter.caseId) query = query.where("case_id", "=", filter.caseId);
  if (filter.webhookKey) query = query.where("webhook_key", "=", filter.webhookKey);
  if (filter.beforeSeq !== undefined) query = query.where("seq", "<", filter.beforeSeq);
  return query.orderBy("seq", "desc").limit(limit).execute();
}

export function listAttempts(db: Executor, tenantId: string, deliveryIds: string[]): Promise<AttemptRow[]> {
  if (deliveryIds.length === 0) return Promise.resolve([]);
  return db
    .selectFrom("webhook_attempts")
    .selectAll()
    .where("tenant_id", "=", tenantId)
    .where("delivery_id", "in", deliveryIds)
    .orderBy("delivery_id")
    .orderBy("attempt")
    .execute();
}

/** A delivery by id alone (the operator's redelivery names no tenant); locked when asked. */
export function findDelivery(
  db: Executor,
  deliveryId: string,
  lock = false,
): Promise<DeliveryRow | undefined> {
  return findRow(db, "webhook_deliveries", { id: deliveryId }, { forUpdate: lock });
}

export interface FailedFilter {
  since: Date;
  until?: Date;
  eventType?: string;
  webhookKey?: string;
}

/**
 * The tenant's failed deliveries that no redelivery has yet replaced, oldest first, locked so
 * that two concurrent calls never redeliver one event twice.
 */
export function lockFailedDeliveries(
  db: Executor,
  tenantId: string,
  filter: FailedFilter,
  limit: number,
): Promise<DeliveryRow[]> {
  let query = db
    .selectFrom("webhook_deliveries")
    .selectAll()
    .where("tenant_id", "=", tenantId)
    .where("status", "=", "failed")
    .where("superseded_by", "is", null)
    .where("created_at", ">=", filter.since);
  if (filter.until) query = query.where("created_at", "<", filter.until);
  if (filter.eventType) query = query.where("event_type", "=", filter.eventType);
  if (filter.webhookKey) query = query.where("webhook_key", "=", filter.webhookKey);
  return query.orderBy("seq").limit(limit).forUpdate().skipLocked().execute();
}

export async function markSuperseded(
  db: Executor,
  tenantId: string,
  pairs: Array<{ original: string; replacement: string }>,
): Promise<void> {
  if (pairs.length === 0) return;
  await sql`
    UPDATE webhook_deliveries d SET superseded_by = v.replacement::uuid
    FROM (VALUES ${sql.join(pairs.map((p) => sql`(${p.original}, ${p.replacement})`))}) AS v (original, replacement)
    WHERE d.tenant_id = ${tenantId} AND d.id = v.original::uuid`.execute(db);
}
