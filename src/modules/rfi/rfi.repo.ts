import { type Selectable, sql } from "kysely";
import { isUuid } from "../../platform/crypto.js";
import { type Executor, findRow, findRows, type Tx, updateRows } from "../../platform/db/index.js";
import type {
  AnswerSource,
  InformationRequestsTable,
  RfiSource,
  RfiStatus,
  RfiUploadSlotsTable,
  StoredField,
} from "./rfi.tables.js";

export type RfiRow = Selectable<InformationRequestsTable>;
export type SlotRow = Selectable<RfiUploadSlotsTable>;

/** What the information-request rules need of a case. */
export interface NewRequest {
  id: string;
  tenantId: string;
  caseId: string;
  source: RfiSource;
  requestedBy: string;
  nodeId: string | null;
  to: string;
  cc: string[] | null;
  subject: string;
  body: string;
  templateId: string | null;
  webhookKey: string | null;
  awaitsResponse: boolean;
  expiresAt: Date | null;
}

export function insertRequest(db: Executor, r: NewRequest): Promise<RfiRow> {
  return db
    .insertInto("information_requests")
    .values({
      id: r.id,
      tenant_id: r.tenantId,
      case_id: r.caseId,
      status: "pending",
      source: r.source,
      requested_by: r.requestedBy,
      node_id: r.nodeId,
      recipient: r.to,
      cc: r.cc,
      subject: r.subject,
      body: r.body,
      template_id: r.templateId,
      webhook_key: r.webhookKey,
      awaits_response: r.awaitsResponse,
      expires_at: r.expiresAt,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * The tenant's request on that case. `lock` takes the row lock that serializes everything
 * that changes a request (answers, mints, cancellation, expiry) on PostgreSQL.
 */
export async function findRequest(
  db: Executor,
  tenantId: string,
  caseId: string,
  rfiId: string,
  lock = false,
): Promise<RfiRow | undefined> {
  if (!isUuid(rfiId) || !isUuid(caseId)) return undefined;
  const key = { tenant_id: tenantId, case_id: caseId, id: rfiId };
  return findRow(db, "information_requests", key, { forUpdate: lock });
}

export function listRequests(db: Executor, tenantId: string, caseId: string): Promise<RfiRow[]> {
  return findRows(db, "information_requests", { tenant_id: tenantId, case_id: caseId }, ["created_at", "id"]);
}

/** The case's `limit` most recent requests, oldest first. */
export async function listLatestRequests(
  db: Executor,
  tenantId: string,
  caseId: string,
  limit: number,
): Promise<RfiRow[]> {
  const rows = await db
    .selectFrom("information_requests")
    .selectAll()
    .where("tenant_id", "=", tenantId)
    .where("case_id", "=", caseId)
    .orderBy("created_at", "desc")
    .orderBy("id", "desc")
    .limit(limit)
    .execute();
  return rows.reverse() as RfiRow[];
}

// Advisory lock class of one case's raising of requests.
const RAISE_LOCK = 7103;

/** Takes the case's raising lock until the transaction ends, and counts its pending requests. */
export async function countPendingLocked(tx: Tx, caseId: string): Promise<number> {
  await sql`SELECT pg_advisory_xact_lock(${RAISE_LOCK}::int, hashtext(${caseId}))`.execute(tx);
  const row = await tx
    .selectFrom("information_requests")
    .select((eb) => eb.fn.countAll<string>().as("n"))
    .where("case_id", "=", caseId)
    .where("status", "=", "pending")
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Moves a pending request to a final status; undefined when it was no longer pending. */
export async function closeRequest(
  db: Executor,
  tenantId: string,
  rfiId: string,
  change:
    | { status: "answered"; answeredBy: string; answerSource: AnswerSource; fields: StoredField[] }
    | { status: "cancelled"; cancelledBy: string | null }
    | { status: "expired" },
): Promise<RfiRow | undefined> {
  const now = sql<Date>`now()`;
  const set =
    change.status === "answered"
      ? {
          status: "answered" as RfiStatus,
          answered_at: now,
          answered_by: change.answeredBy,
          answer_source: change.answerSource,
          answer_fields: JSON.stringify(change.fields),
        }
      : change.status === "cancelled"
        ? { status: "cancelled" as RfiStatus, cancelled_at: now, cancelled_by: change.cancelledBy }
        : { status: "expired" as RfiStatus, expired_at: now };
  return db
    .updateTable("information_requests")
    .set({ ...set, updated_at: now })
    .where("tenant_id", "=", tenantId)
    .where("id", "=", rfiId)
    .where("status", "=", "pending")
    .returningAll()
    .executeTakeFirst();
}

export function recordReminder(db: Executor, tenantId: string, rfiId: string): Promise<RfiRow> {
  return db
    .updateTable("information_requests")
    .set({
      reminder_count: sql<number>`reminder_count + 1`,
      last_reminded_at: sql<Date>`now()`,
      updated_at: sql<Date>`now()`,
    })
    .where("tenant_id", "=", tenantId)
    .where("id", "=", rfiId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Counts one more minted slot against the request (its row is already locked by the caller). */
export async function countSlotOnRequest(db: Executor, tenantId: string, rfiId: string): Promise<void> {
  const slots = { slots_minted: sql<number>`slots_minted + 1` };
  await updateRows(db, "information_requests", { tenant_id: tenantId, id: rfiId }, slots);
}

/**
 * Counts one more minted slot against the case, unless that would pass `limit`. The upsert
 * locks the case's budget row, so concurrent mints on the case's requests count one by one.
 */
export async function countSlotOnCase(
  db: Executor,
  tenantId: string,
  caseId: string,
  limit: number,
): Promise<boolean> {
  const result = await sql<{ slots_minted: number }>`
    INSERT INTO rfi_case_upload_budgets (case_id, tenant_id, slots_minted)
    VALUES (${caseId}, ${tenantId}, 1)
    ON CONFLICT (case_id) DO UPDATE SET slots_minted = rfi_case_upload_budgets.slots_minted + 1
    WHERE rfi_case_upload_budgets.slots_minted < ${limit}
    RETURNING slots_minted`.execute(db);
  return result.rows.length === 1;
}

export interface NewSlot {
  id: string;
  tenantId: string;
  caseId: string;
  rfiId: string;
  objectKey: string;
  filename: string;
  contentType: string;
  sizeBytes: number;
  expiresAt: Date;
}

export function insertSlot(db: Executor, s: NewSlot): Promise<SlotRow> {
  return db
    .insertInto("rfi_upload_slots")
    .values({
      id: s.id,
      tenant_id: s.tenantId,
      case_id: s.caseId,
      rfi_id: s.rfiId,
      object_key: s.objectKey,
      filename: s.filename,
      content_type: s.contentType,
      size_bytes: s.sizeBytes,
      expires_at: s.expiresAt,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The tenant's slots among these ids (any request), locked, with whether each has expired. */
export async function findSlotsForAttach(
  db: Executor,
  tenantId: string,
  ids: string[],
): Promise<Array<SlotRow & { expired: boolean }>> {
  if (ids.length === 0) return [];
  return db
    .selectFrom("rfi_upload_slots")
    .selectAll()
    .select(sql<boolean>`expires_at <= now()`.as("expired"))
    .where("tenant_id", "=", tenantId)
    .where("id", "in", ids)
    .forUpdate()
    .execute();
}

export async function attachSlot(
  db: Executor,
  tenantId: string,
  slotId: string,
  position: number,
  label: string | null,
  etag: string | null,
): Promise<void> {
  await db
    .updateTable("rfi_upload_slots")
    .set({ attached_at: sql<Date>`now()`, position, label, etag })
    .where("tenant_id", "=", tenantId)
    .where("id", "=", slotId)
    .where("attached_at", "is", null)
    .execute();
}

/** The documents attached to these requests' answers, in the order each answer sent them. */
export function listAttachedSlots(db: Executor, tenantId: string, rfiIds: string[]): Promise<SlotRow[]> {
  if (rfiIds.length === 0) return Promise.resolve([]);
  return db
    .selectFrom("rfi_upload_slots")
    .selectAll()
    .where("tenant_id", "=", tenantId)
    .where("rfi_id", "in", rfiIds)
    .where("attached_at", "is not", null)
    .orderBy("rfi_id")
    .orderBy("position")
    .execute();
}

export async function findCaseSlot(
  db: Executor,
  tenantId: string,
  caseId: string,
  slotId: string,
): Promise<SlotRow | undefined> {
  if (!isUuid(slotId)) return undefined;
  return findRow(db, "rfi_upload_slots", { tenant_id: tenantId, case_id: caseId, id: slotId });
}
