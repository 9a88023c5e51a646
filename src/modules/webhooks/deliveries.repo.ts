import { type RawBuilder, sql } from "kysely";
import { type Db, type Executor, findRow, findRows, type Row } from "../../platform/db/index.js";
import { notifyDeliveries } from "./delivery-queue.js";
import type { WebhookConfigRow } from "./webhook-configs.repo.js";
import type { DeliveryStatus, WebhookSecret } from "./webhooks.tables.js";

export type DeliveryRow = Row<"webhook_deliveries">;
export type AttemptRow = Row<"webhook_attempts">;

/** A delivery claimed for an attempt, with the configuration it is routed to (if it exists). */
export interface AttemptContext extends Pick<DeliveryRow, "id" | "tenant_id" | "webhook_key" | "body"> {
  /** The claim's number: its outcome is recorded only if no later claim's was. */
  turn: number;
  /** The number of this attempt, counting the interrupted ones before it. */
  attempt: number;
  /** Attempts whose outcome was recorded. */
  recorded_attempts: number;
  /** Attempts a process that died had started and not recorded. */
  interrupted: number;
  /** When the previous recorded attempt started (an interrupted one is logged with this time). */
  prev_attempt_at: Date | null;
  config: Pick<
    WebhookConfigRow,
    "url" | "secrets" | "secrets_sealed" | "active_secret_id" | "max_attempts" | "timeout_ms"
  > | null;
}

/** Serializes claims across processes, so that each one sees every claim committed before it. */
const CLAIM_LOCK = 7_007_2012;

/**
 * Claims up to `limit` due pending deliveries, oldest due first and at most `perEndpoint` of one
 * endpoint (or its lane's room, where a lane has grown to have more), passing over the endpoints
 * whose lanes are full (a stalled endpoint's backlog stays
 * where it is, unwritten, instead of being claimed and handed back), as one claim row that holds their
 * entries (decision 0007): the attempts are counted before anything is sent, and no delivery row
 * is written. A delivery with an open entry in a live claim is another worker's; the open entries
 * of claims whose lease ran out are attempts a process that died had started, and count; so does
 * the first attempt of a delivery handed to its inserting process (`handed_until`, claim turn 1)
 * once that lease has run out with no outcome recorded, and while it is alive the delivery is
 * that process's. Rows another transaction holds (a redelivery) are skipped.
 */
export async function claimDeliveries(
  db: Db,
  claimId: string,
  limit: number,
  leaseSeconds: number,
  /**
   * Endpoints to pass over (their lanes are full here), how many of one endpoint a claim takes,
   * and the endpoints whose lanes have room for more than that (as much as their room).
   */
  lanes: {
    full: Array<{ tenantId: string; webhookKey: string }>;
    wide: Array<{ tenantId: string; webhookKey: string; room: number }>;
    perEndpoint: number;
  },
): Promise<AttemptContext[]> {
  const result = await db.transaction(async (tx) => {
    await sql`SELECT pg_advisory_xact_lock(${CLAIM_LOCK})`.execute(tx);
    return sql<Record<string, unknown>>`
      WITH open AS (
        SELECT e.delivery_id, e.turn, c.lease_until > now() AS live
        FROM webhook_claims c, unnest(c.deliveries, c.turns) AS e (delivery_id, turn)
      ),
      busy AS (
        SELECT * FROM unnest(${lanes.full.map((f) => f.tenantId)}::uuid[], ${lanes.full.map((f) => f.webhookKey)}::text[])
          AS f (tenant_id, webhook_key)
      ),
      wide AS (
        SELECT * FROM unnest(${lanes.wide.map((w) => w.tenantId)}::uuid[], ${lanes.wide.map((w) => w.webhookKey)}::text[],
                             ${lanes.wide.map((w) => w.room)}::int[])
          AS w (tenant_id, webhook_key, room)
      ),
      due AS (
        SELECT d.id, d.next_attempt_at,
               coalesce((SELECT w.room FROM wide w WHERE w.tenant_id = d.tenant_id AND w.webhook_key = d.webhook_key),
                        ${lanes.perEndpoint}) AS room,
               row_number() OVER (PARTITION BY d.tenant_id, d.webhook_key ORDER BY d.next_attempt_at) AS place
        FROM (
          SELECT d.id, d.tenant_id, d.webhook_key, d.next_attempt_at, d.claims
          FROM webhook_deliveries d
          WHERE d.status = 'pending' AND d.next_attempt_at <= now()
            AND (d.claims > 0 OR d.handed_until IS NULL OR d.handed_until <= now())
            AND NOT EXISTS (SELECT 1 FROM busy f WHERE f.tenant_id = d.tenant_id AND f.webhook_key = d.webhook_key)
          ORDER BY d.next_attempt_at
          LIMIT ${limit * 8}
        ) d
        WHERE NOT EXISTS (SELECT 1 FROM open o WHERE o.delivery_id = d.id AND o.live AND o.turn > d.claims)
      ),
      picked AS (
        SELECT d.id, d.tenant_id, d.webhook_key, d.body, d.claims, d.attempt_count, d.last_attempt_at,
               d.next_attempt_at, (d.claims = 0 AND d.handed_until IS NOT NULL)::int AS handed
        FROM webhook_deliveries d
        WHERE d.id IN (
          SELECT id FROM due WHERE place <= room ORDER BY next_attempt_at LIMIT ${limit}
        ) AND d.status = 'pending' AND d.next_attempt_at <= now()
          AND (d.claims > 0 OR d.handed_until IS NULL OR d.handed_until <= now())
        FOR UPDATE OF d SKIP LOCKED
      ),
      claimed AS (
        SELECT p.*, coalesce(s.n, 0)::int + p.handed AS interrupted,
               greatest(p.claims, coalesce(s.turn, 0), p.handed) + 1 AS turn
        FROM picked p
        LEFT JOIN LATERAL (
          SELECT count(*) AS n, max(o.turn) AS turn FROM open o
          WHERE o.delivery_id = p.id AND NOT o.live AND o.turn > p.claims
        ) s ON true
      ),
      claim AS (
        INSERT INTO webhook_claims (id, lease_until, deliveries, turns)
        SELECT ${claimId}::uuid, now() + ${leaseSeconds} * interval '1 second', array_agg(id), array_agg(turn)
        FROM claimed HAVING count(*) > 0
      )
      SELECT d.id, d.tenant_id, d.webhook_key, d.body, d.turn, d.attempt_count, d.interrupted,
             d.last_attempt_at AS prev_attempt_at,
             c.url, c.secrets, c.secrets_sealed, c.active_secret_id, c.max_attempts, c.timeout_ms
      FROM claimed d
      LEFT JOIN webhook_configs c ON c.tenant_id = d.tenant_id AND c.webhook_key = d.webhook_key
      ORDER BY d.next_attempt_at`.execute(tx);
  });
  return result.rows.map((row) => ({
    id: row.id as string,
    tenant_id: row.tenant_id as string,
    webhook_key: row.webhook_key as string,
    body: row.body as string,
    turn: row.turn as number,
    recorded_attempts: row.attempt_count as number,
    interrupted: row.interrupted as number,
    attempt: (row.attempt_count as number) + (row.interrupted as number) + 1,
    prev_attempt_at: row.prev_attempt_at as Date | null,
    config: configOf(row),
  }));
}

/** The configuration columns a claim (or a hand-off) read with its deliveries, or null without one. */
export function configOf(row: Record<string, unknown>): AttemptContext["config"] {
  return row.url === null || row.url === undefined
    ? null
    : {
        url: row.url as string,
        secrets: row.secrets as WebhookSecret[],
        secrets_sealed: row.secrets_sealed as boolean,
        active_secret_id: row.active_secret_id as string | null,
        max_attempts: row.max_attempts as number,
        timeout_ms: row.timeout_ms as number,
      };
}

/**
 * Pushes the leases of a worker's claims forward, and those of its handed deliveries still in
 * flight whose lease is half gone (most attempts end before, and cost no renewal); and forgets
 * dead claims with no open entry left.
 */
export async function renewClaims(
  db: Executor,
  claimIds: string[],
  handedIds: string[],
  leaseSeconds: number,
): Promise<void> {
  await sql`
    WITH renewed AS (
      UPDATE webhook_claims SET lease_until = now() + ${leaseSeconds} * interval '1 second'
      WHERE id = ANY(${claimIds}::uuid[])
    ),
    handed AS (
      UPDATE webhook_deliveries SET handed_until = now() + ${leaseSeconds} * interval '1 second'
      WHERE id = ANY(${handedIds}::uuid[]) AND claims = 0 AND status = 'pending'
        AND handed_until < now() + ${leaseSeconds / 2} * interval '1 second'
    )
    DELETE FROM webhook_claims c
    WHERE c.lease_until < now() AND NOT (c.id = ANY(${claimIds}::uuid[])) AND NOT EXISTS (
      SELECT 1 FROM unnest(c.deliveries, c.turns) AS e (delivery_id, turn)
      JOIN webhook_deliveries d ON d.id = e.delivery_id
      WHERE d.status = 'pending' AND d.claims < e.turn
    )`.execute(db);
}

/** Handed deliveries a stopped worker will not attempt: back to any worker's claim, no attempt counted. */
export async function giveBackHanded(db: Executor, ids: string[]): Promise<void> {
  await sql`
    WITH given AS (
      UPDATE webhook_deliveries SET handed_until = NULL
      WHERE id = ANY(${ids}::uuid[]) AND claims = 0 AND status = 'pending'
      RETURNING id
    )
    SELECT ${notifyDeliveries} WHERE EXISTS (SELECT 1 FROM given)`.execute(db);
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

export interface Outcome {
  tenantId: string;
  deliveryId: string;
  /** The claim's number; the delivery row is only updated if no later claim's outcome was recorded. */
  turn: number;
  status: DeliveryStatus;
  /** Attempts the delivery has made; a deferral makes none. */
  attemptCount: number;
  /** The attempt made, or null (a deferral, a delivery given up without sending). */
  sent: AttemptRecord | null;
  lastError: string | null;
  /** When status is pending: how long until the next attempt. */
  retryInMs: number | null;
  /** Rows for webhook_attempts: failed and interrupted attempts (a success is kept on the delivery). */
  failures: AttemptRecord[];
  /** The claim whose last open entry this is, deleted with it. */
  claimDone: string | null;
}

/**
 * Writes the outcomes of many claims in one statement: each delivery's new state (a success with
 * its attempt's log), the rows of failed and interrupted attempts, and the claims now finished.
 * The outcomes and attempts go as one JSON document each, so that the statement's text (prepared
 * once) and its three parameters are the same for any number of them.
 */
export async function recordOutcomes(db: Executor, outcomes: Outcome[]): Promise<void> {
  // A field left out reads as NULL in json_to_recordset: what is null is not written, so a
  // success's outcome is less text to build and for the database to parse.
  const states = outcomes.map((o) => {
    const s = o.sent;
    return {
      tenant_id: o.tenantId,
      id: o.deliveryId,
      turn: o.turn,
      status: o.status,
      attempt_count: o.attemptCount,
      retry_ms: o.retryInMs ?? undefined,
      attempted: s !== null || o.status !== "pending",
      started_at: s?.startedAt,
      status_code: s?.statusCode ?? undefined,
      error: o.lastError ?? undefined,
      target: s?.target ?? undefined,
      secret_id: s?.secretId ?? undefined,
      latency_ms: s?.latencyMs ?? undefined,
      response_body: s?.responseBody ?? undefined,
    };
  });
  const failures = outcomes.flatMap((o) =>
    o.failures.map((a) => ({
      delivery_id: o.deliveryId,
      attempt: a.attempt,
      tenant_id: o.tenantId,
      started_at: a.startedAt,
      target: a.target,
      secret_id: a.secretId,
      status_code: a.statusCode,
      latency_ms: a.latencyMs,
      error: a.error,
      response_body: a.responseBody,
    })),
  );
  const done = outcomes.flatMap((o) => (o.claimDone === null ? [] : [o.claimDone]));
  await sql`
    WITH updated AS (
      UPDATE webhook_deliveries d
      SET claims = v.turn, status = v.status, attempt_count = v.attempt_count, recorded_attempts = v.attempt_count,
          next_attempt_at = CASE WHEN v.status <> 'pending' THEN NULL
                                 WHEN v.retry_ms IS NULL THEN d.next_attempt_at
                                 ELSE now() + v.retry_ms * interval '1 millisecond' END,
          last_attempt_at = coalesce(v.started_at, d.last_attempt_at), handed_until = NULL,
          last_status_code = CASE WHEN v.attempted THEN v.status_code ELSE d.last_status_code END,
          last_error = CASE WHEN v.attempted THEN v.error ELSE d.last_error END,
          last_target = CASE WHEN v.status = 'succeeded' THEN v.target END,
          last_secret_id = CASE WHEN v.status = 'succeeded' THEN v.secret_id END,
          last_latency_ms = CASE WHEN v.status = 'succeeded' THEN v.latency_ms END,
          last_response_body = CASE WHEN v.status = 'succeeded' THEN v.response_body END,
          completed_at = CASE WHEN v.status = 'pending' THEN NULL ELSE now() END
      FROM json_to_recordset(${JSON.stringify(states)}::json)
        AS v (tenant_id uuid, id uuid, turn int, status text, attempt_count int, retry_ms int8, attempted bool,
              started_at timestamptz, status_code int, error text, target text, secret_id text, latency_ms int,
              response_body text)
      -- The ids again, as an array for the primary key: the planner counts a JSON document as
      -- 100 rows whatever it holds (decision 0030).
      WHERE d.id = ANY(${outcomes.map((o) => o.deliveryId)}::uuid[])
        AND d.tenant_id = v.tenant_id AND d.id = v.id AND d.claims < v.turn
      RETURNING d.id
    ),
    finished AS (
      DELETE FROM webhook_claims WHERE id = ANY(${done}::uuid[])
    )
    INSERT INTO webhook_attempts
      (delivery_id, attempt, tenant_id, started_at, target, secret_id, status_code, latency_ms, error, response_body)
    SELECT a.* FROM json_to_recordset(${JSON.stringify(failures)}::json)
      AS a (delivery_id uuid, attempt int, tenant_id uuid, started_at timestamptz, target text, secret_id text,
            status_code int, latency_ms int, error text, response_body text)
    WHERE a.delivery_id IN (SELECT id FROM updated)
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

const STATUS_LITERALS: Record<DeliveryStatus, RawBuilder<DeliveryStatus>> = {
  pending: sql.lit("pending"),
  succeeded: sql.lit("succeeded"),
  failed: sql.lit("failed"),
};

/**
 * A status written into the statement, not bound: a plan made for any status could not use the
 * index of the deliveries not succeeded (`webhook_deliveries_tenant_unsettled`, migration 0024).
 */
function statusLiteral(status: DeliveryStatus): RawBuilder<DeliveryStatus> {
  const literal = STATUS_LITERALS[status];
  if (!literal) throw new Error(`unknown delivery status ${JSON.stringify(status)}`);
  return literal;
}

/** A tenant's deliveries, newest first. */
export function listDeliveries(
  db: Executor,
  tenantId: string,
  filter: DeliveryFilter,
  limit: number,
): Promise<DeliveryRow[]> {
  let query = db.selectFrom("webhook_deliveries").selectAll().where("tenant_id", "=", tenantId);
  if (filter.status) query = query.where("status", "=", statusLiteral(filter.status));
  if (filter.eventType) query = query.where("event_type", "=", filter.eventType);
  if (filter.caseId) query = query.where("case_id", "=", filter.caseId);
  if (filter.webhookKey) query = query.where("webhook_key", "=", filter.webhookKey);
  if (filter.beforeSeq !== undefined) query = query.where("seq", "<", filter.beforeSeq);
  return query.orderBy("seq", "desc").limit(limit).execute();
}

export function listAttempts(db: Executor, tenantId: string, deliveryIds: string[]): Promise<AttemptRow[]> {
  const match = { tenant_id: tenantId, delivery_id: deliveryIds };
  return findRows(db, "webhook_attempts", match, ["delivery_id", "attempt"]);
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
    .where("status", "=", statusLiteral("failed"))
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
