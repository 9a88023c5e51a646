import type { AppContext } from "../../platform/context.js";
import { isUuid } from "../../platform/crypto.js";
import type { InSameTransaction } from "../../platform/db/index.js";
import { badRequest, notFound } from "../../platform/errors.js";
import { requireTenant } from "../tenants/index.js";
import {
  type AttemptRecord,
  type AttemptRow,
  type DeliveryRow,
  findDelivery,
  listAttempts,
  listDeliveries,
  lockFailedDeliveries,
  markSuperseded,
} from "./deliveries.repo.js";
import { type NewDelivery, queueDeliveries } from "./delivery-queue.js";
import { EVENT_TYPES } from "./events.js";
import type { DeliveryStatus } from "./webhooks.tables.js";

export const DELIVERY_STATUSES: readonly DeliveryStatus[] = ["pending", "succeeded", "failed"];
/** How many failed deliveries one redeliver-failed call takes on; call again for the rest. */
export const REDELIVER_BATCH = 1000;

/** An attempt as the delivery log shows it: its record, with the time it started as `at`. */
export type AttemptView = Omit<AttemptRecord, "startedAt"> & { at: string };

export interface DeliveryView {
  deliveryId: string;
  eventId: string;
  eventType: string;
  caseId: string | null;
  webhookKey: string;
  webhookId: string;
  status: DeliveryStatus;
  attemptCount: number;
  nextAttemptAt: string | null;
  lastStatusCode: number | null;
  lastError: string | null;
  redeliveryOf: string | null;
  redeliveredAs: string | null;
  createdAt: string;
  completedAt: string | null;
  attempts: AttemptView[];
}

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

function toAttemptView(row: AttemptRow): AttemptView {
  return {
    attempt: row.attempt,
    at: row.started_at.toISOString(),
    target: row.target,
    secretId: row.secret_id,
    statusCode: row.status_code,
    latencyMs: row.latency_ms,
    error: row.error,
    responseBody: row.response_body,
  };
}

/**
 * The delivery's attempts: the rows of its failed and interrupted ones and, for a delivery that
 * succeeded, the successful attempt kept on the delivery row itself (decision 0007).
 */
function attemptsOf(row: DeliveryRow, rows: AttemptRow[]): AttemptView[] {
  const views = rows.map(toAttemptView);
  const n = row.recorded_attempts;
  if (row.status === "succeeded" && row.last_attempt_at !== null && !rows.some((a) => a.attempt === n)) {
    views.push({
      attempt: n,
      at: row.last_attempt_at.toISOString(),
      target: row.last_target,
      secretId: row.last_secret_id,
      statusCode: row.last_status_code,
      latencyMs: row.last_latency_ms,
      error: null,
      responseBody: row.last_response_body,
    });
  }
  return views;
}

function toDeliveryView(row: DeliveryRow, attempts: AttemptRow[]): DeliveryView {
  return {
    deliveryId: row.id,
    eventId: row.event_id,
    eventType: row.event_type,
    caseId: row.case_id,
    webhookKey: row.webhook_key,
    webhookId: row.webhook_id,
    status: row.status,
    attemptCount: row.recorded_attempts,
    nextAttemptAt: iso(row.next_attempt_at),
    lastStatusCode: row.last_status_code,
    lastError: row.last_error,
    redeliveryOf: row.redelivery_of,
    redeliveredAs: row.superseded_by,
    createdAt: row.created_at.toISOString(),
    completedAt: iso(row.completed_at),
    attempts: attemptsOf(row, attempts),
  };
}

export interface DeliveryQuery {
  status?: string;
  eventType?: string;
  caseId?: string;
  webhookKey?: string;
  limit?: number;
  cursor?: string;
}

function encodeCursor(seq: number): string {
  return Buffer.from(`d:${seq}`).toString("base64url");
}

function decodeCursor(cursor: string): number {
  const match = /^d:(\d{1,15})$/.exec(Buffer.from(cursor, "base64url").toString("utf8"));
  if (!match)
    throw badRequest("cursor is not one this service returned", [{ path: "cursor", message: "is invalid" }]);
  return Number(match[1]);
}

function checkFilters(query: { status?: string; eventType?: string; caseId?: string }): void {
  if (query.status !== undefined && !DELIVERY_STATUSES.includes(query.status as DeliveryStatus)) {
    throw badRequest(`status must be one of ${DELIVERY_STATUSES.join(", ")}`, [
      { path: "status", message: `must be one of ${DELIVERY_STATUSES.join(", ")}` },
    ]);
  }
  if (query.eventType !== undefined && !(EVENT_TYPES as readonly string[]).includes(query.eventType)) {
    throw badRequest(`eventType must be one of ${EVENT_TYPES.join(", ")}`, [
      { path: "eventType", message: `must be one of ${EVENT_TYPES.join(", ")}` },
    ]);
  }
  if (query.caseId !== undefined && !isUuid(query.caseId)) {
    throw badRequest("caseId must be a UUID", [{ path: "caseId", message: "must be a UUID" }]);
  }
}

/** A tenant's deliveries, newest first, each with its attempts. */
export async function getDeliveries(
  ctx: AppContext,
  tenantId: string,
  query: DeliveryQuery,
): Promise<{ deliveries: DeliveryView[]; nextCursor: string | null }> {
  await requireTenant(ctx.db.root, tenantId);
  checkFilters(query);
  const limit = query.limit ?? 25;
  const rows = await listDeliveries(
    ctx.db.root,
    tenantId,
    {
      status: query.status as DeliveryStatus | undefined,
      eventType: query.eventType,
      caseId: query.caseId,
      webhookKey: query.webhookKey,
      beforeSeq: query.cursor === undefined ? undefined : decodeCursor(query.cursor),
    },
    limit + 1,
  );
  const page = rows.slice(0, limit);
  const attempts = await listAttempts(
    ctx.db.root,
    tenantId,
    page.map((r) => r.id),
  );
  const byDelivery = new Map<string, AttemptRow[]>();
  for (const a of attempts) byDelivery.set(a.delivery_id, [...(byDelivery.get(a.delivery_id) ?? []), a]);
  const last = page.at(-1);
  return {
    deliveries: page.map((r) => toDeliveryView(r, byDelivery.get(r.id) ?? [])),
    nextCursor: rows.length > limit && last ? encodeCursor(last.seq) : null,
  };
}

async function requireDelivery(ctx: AppContext, deliveryId: string): Promise<DeliveryRow> {
  const row = isUuid(deliveryId) ? await findDelivery(ctx.db.root, deliveryId) : undefined;
  if (!row) throw notFound("webhook delivery");
  return row;
}

/** One delivery with its attempts and the exact body every attempt sent. */
export async function getDelivery(
  ctx: AppContext,
  deliveryId: string,
): Promise<DeliveryView & { tenantId: string; body: string }> {
  const row = await requireDelivery(ctx, deliveryId);
  const attempts = await listAttempts(ctx.db.root, row.tenant_id, [row.id]);
  return { tenantId: row.tenant_id, ...toDeliveryView(row, attempts), body: row.body };
}

/** A new delivery of the same event to the same configuration: the same fields in the same order. */
function redeliveryOf(original: DeliveryRow): NewDelivery {
  return {
    tenantId: original.tenant_id,
    eventId: original.event_id,
    caseId: original.case_id,
    eventType: original.event_type,
    webhookKey: original.webhook_key,
    payload: JSON.parse(original.body) as Record<string, unknown>,
    redeliveryOf: original.id,
  };
}

/**
 * Sends a delivery's event again as a new delivery with a fresh webhookId (the receiver sees a
 * new delivery, not a retry), to the same configuration.
 */
/** What a redelivery did: the original's tenant and status, the new delivery's ids. */
export interface Redelivered {
  tenantId: string;
  status: string;
  deliveryId: string;
  webhookId: string;
}

/** Redelivers one delivery; `also` gets what it did, in its transaction. */
export async function redeliver(
  ctx: AppContext,
  deliveryId: string,
  also?: InSameTransaction<Redelivered>,
): Promise<DeliveryView> {
  if (!isUuid(deliveryId)) throw notFound("webhook delivery");
  const created = await ctx.db.transaction(async (tx) => {
    const original = await findDelivery(tx, deliveryId, true);
    if (!original) throw notFound("webhook delivery");
    const [queued] = await queueDeliveries(tx, [redeliveryOf(original)]);
    if (!queued) throw new Error("redelivery was not queued");
    await markSuperseded(tx, original.tenant_id, [{ original: original.id, replacement: queued.deliveryId }]);
    await also?.(tx, {
      tenantId: original.tenant_id,
      status: original.status,
      deliveryId: queued.deliveryId,
      webhookId: queued.webhookId,
    });
    return queued.deliveryId;
  });
  ctx.log.info({ deliveryId, redeliveryId: created }, "webhook redelivery queued");
  const row = await findDelivery(ctx.db.root, created);
  if (!row) throw new Error("redelivery vanished");
  return toDeliveryView(row, []);
}

export interface RedeliverFailedInput {
  since: string;
  until?: string;
  eventType?: string;
  webhookKey?: string;
}

/**
 * Redelivers every failed delivery of a tenant created in the window that no redelivery has
 * replaced yet, each as a new delivery with a fresh webhookId. Each event goes out once however
 * often this is called; at most REDELIVER_BATCH per call (`hasMore` says to call again).
 */
export async function redeliverFailed(
  ctx: AppContext,
  tenantId: string,
  input: RedeliverFailedInput,
  also?: InSameTransaction<{ deliveryIds: string[] }>,
): Promise<{ redelivered: number; deliveryIds: string[]; hasMore: boolean }> {
  await requireTenant(ctx.db.root, tenantId);
  checkFilters({ eventType: input.eventType });
  const since = new Date(input.since);
  const until = input.until === undefined ? undefined : new Date(input.until);
  if (until && until <= since) {
    throw badRequest("until must be later than since", [
      { path: "until", message: "must be later than since" },
    ]);
  }
  const result = await ctx.db.transaction(async (tx) => {
    const failed = await lockFailedDeliveries(
      tx,
      tenantId,
      { since, until, eventType: input.eventType, webhookKey: input.webhookKey },
      REDELIVER_BATCH + 1,
    );
    const batch = failed.slice(0, REDELIVER_BATCH);
    const queued = await queueDeliveries(tx, batch.map(redeliveryOf));
    await markSuperseded(
      tx,
      tenantId,
      batch.map((original, i) => ({ original: original.id, replacement: queued[i]?.deliveryId as string })),
    );
    const deliveryIds = queued.map((q) => q.deliveryId);
    if (deliveryIds.length > 0) await also?.(tx, { deliveryIds });
    return { deliveryIds, hasMore: failed.length > REDELIVER_BATCH };
  });
  ctx.log.info({ tenantId, count: result.deliveryIds.length }, "failed webhook deliveries redelivered");
  return { redelivered: result.deliveryIds.length, ...result };
}
