import { type Expression, type RawBuilder, sql, type Updateable } from "kysely";
import { isUuid } from "../../platform/crypto.js";
import {
  type Executor,
  findRow,
  jsonOrNull,
  keysetPage,
  type Row,
  updateRows,
} from "../../platform/db/index.js";
import { JOBS_CHANNEL } from "../../platform/jobs.js";
import { isLiveKey } from "../auth/index.js";
import { isCurrentVersion } from "../workflows/index.js";
import type { CaseAcceptHook } from "./cases.seam.js";
import type { CasesTable } from "./cases.tables.js";
import type { StartClaim } from "./start-handoff.js";

export type CaseRow = Row<"cases">;

export interface NewCase {
  id: string;
  tenantId: string;
  requestId: string;
  status: string;
  type: string;
  workflowId: string;
  workflowVersion: number;
  subject: Record<string, unknown>;
  payload: Record<string, unknown>;
  metadata: Record<string, unknown>;
  externalCustomerId: string | null;
  eventTimestamp: Date | null;
  idempotencyKey: string | null;
  dryRun: boolean;
  /** The workflow node the first step runs. */
  currentNodeId?: string | null;
  /**
   * Inserted already claimed, its first run counted and leased for this many seconds, for the
   * starter of the process inserting it (decision 0028): no claim statement, no row update.
   */
  claimSeconds?: number;
  /**
   * Inserted only while its workflow version is still the workflow's current one: the version was
   * taken as current from what the process had seen, not read now (decision 0028).
   */
  confirmCurrent?: boolean;
  /** Inserted only while this API key is live: the request was let in unconfirmed (decision 0028). */
  confirmKeyId?: string;
}

/**
 * A new case's columns as its insert writes them and as reading it back gives them: its
 * submission's, its documents (text to write, or values as read back) and its times. One object
 * literal: on Node.js 20 a property added to a spread's copy costs a map transition of its own
 * (decision 0038).
 */
function newCaseColumns<D>(c: NewCase, subject: D, payload: D, metadata: D, at: Date) {
  return {
    id: c.id,
    tenant_id: c.tenantId,
    request_id: c.requestId,
    status: c.status,
    type: c.type,
    workflow_id: c.workflowId,
    workflow_version: c.workflowVersion,
    external_customer_id: c.externalCustomerId,
    event_timestamp: c.eventTimestamp,
    idempotency_key: c.idempotencyKey,
    dry_run: c.dryRun,
    current_node_id: c.currentNodeId ?? null,
    subject,
    payload,
    metadata,
    created_at: at,
    updated_at: at,
  };
}

function caseValues(c: NewCase) {
  // Millisecond timestamps set here, so a keyset cursor (which carries a JS Date) is exact.
  const json = JSON.stringify;
  return newCaseColumns(c, json(c.subject), json(c.payload), json(c.metadata), new Date());
}

export function insertCase(db: Executor, c: NewCase): Promise<CaseRow> {
  return db.insertInto("cases").values(caseValues(c)).returningAll().executeTakeFirstOrThrow();
}

/**
 * Inserts cases in one statement (atomic on its own, one round trip for the submissions of many
 * concurrent requests), skipping any case whose tenant already has a case with its idempotency
 * key: the unique index decides, so of concurrent submissions with one key exactly one inserts,
 * also within one statement. When any case left to any starter is inserted, `notify` goes out on
 * the jobs channel on commit (the engine's starters wake for it); cases inserted claimed wake no
 * one. Returns the cases inserted: their ids, each with the creation time it was given.
 */
/**
 * What a new case's insert notifies on the jobs channel, so that idle starters wake at once.
 * A new case needs no job of its own: a `received` case is its own place in the queue.
 */
export const START_NOTIFICATION = "engine.start";

/**
 * How far a case's acceptance time (`created_at`, the service's clock as it builds the insert)
 * may lie before the start of the transaction that inserts it (a wait for a connection, a clock
 * behind the database's): an older one is raised to this, less a millisecond. A reader that
 * knows the oldest transaction in progress then knows that nothing it cannot see yet was accepted
 * more than this before that (the kept windows of long histories, decision 0021).
 */
export const ACCEPTED_LAG_SECONDS = 1;

export async function insertCases(
  db: Executor,
  cases: NewCase[],
  notify: string,
  onAccept: readonly CaseAcceptHook[] = [],
): Promise<Map<string, Date>> {
  if (cases.length === 0) return new Map();
  const values = sql.join(
    cases.map((c) => {
      const v = caseValues(c);
      return sql`(${v.id}::uuid, ${v.tenant_id}::uuid, ${v.request_id}::text, ${v.status}::text,
        ${v.type}::text, ${v.workflow_id}::text, ${v.workflow_version}::int, ${v.subject}::json,
        ${v.payload}::json, ${v.metadata}::json, ${v.external_customer_id}::text,
        ${v.event_timestamp}::timestamptz, ${v.idempotency_key}::text, ${v.dry_run}::boolean,
        ${v.current_node_id}::text, ${v.created_at}::timestamptz, ${c.claimSeconds ?? null}::int,
        ${c.confirmCurrent === true}::boolean, ${c.confirmKeyId ?? null}::text)`;
    }),
  );
  // An acceptance time behind the transaction's start by more than the lag is raised to it, in
  // whole milliseconds like the service's own times.
  const acceptedAtLeast = sql`date_trunc('milliseconds', now() - make_interval(secs => ${ACCEPTED_LAG_SECONDS}))`;
  // A case on a version taken as current goes in only while it still is, and one whose request
  // was let in on a key not looked up only while the key is live; one claimed for this process's
  // starter goes in with its first run counted and its lease.
  const insert = sql`
    INSERT INTO cases (id, tenant_id, request_id, status, type, workflow_id, workflow_version,
      subject, payload, metadata, external_customer_id, event_timestamp, idempotency_key, dry_run,
      current_node_id, created_at, updated_at, start_attempts, start_claimed_until)
    SELECT v.id, v.tenant_id, v.request_id, v.status, v.type, v.workflow_id, v.workflow_version,
      v.subject, v.payload, v.metadata, v.external_customer_id, v.event_timestamp,
      v.idempotency_key, v.dry_run, v.current_node_id,
      greatest(v.created_at, ${acceptedAtLeast}), greatest(v.created_at, ${acceptedAtLeast}),
      CASE WHEN v.claim_seconds IS NULL THEN 0 ELSE 1 END,
      now() + make_interval(secs => v.claim_seconds)
    FROM (VALUES ${values}) AS v (id, tenant_id, request_id, status, type, workflow_id,
      workflow_version, subject, payload, metadata, external_customer_id, event_timestamp,
      idempotency_key, dry_run, current_node_id, created_at, claim_seconds, confirm_current,
      confirm_key_id)
    WHERE (NOT v.confirm_current
        OR ${isCurrentVersion(sql.ref("v.tenant_id"), sql.ref("v.workflow_id"), sql.ref("v.workflow_version"))})
      AND (v.confirm_key_id IS NULL OR ${isLiveKey(sql.ref("v.confirm_key_id"), sql.ref("v.tenant_id"))})
    ON CONFLICT (tenant_id, idempotency_key) DO NOTHING
    RETURNING id, coalesce(event_timestamp, created_at) AS case_time, created_at`;
  // What other features write with the cases (their entities), in this one statement.
  const accepted = cases.map((c) => ({
    id: c.id,
    tenantId: c.tenantId,
    type: c.type,
    subject: c.subject,
    externalCustomerId: c.externalCustomerId,
    dryRun: c.dryRun,
  }));
  const extra = onAccept.flatMap((hook) => {
    const clauses = hook(accepted);
    return clauses ? [sql`, ${clauses}`] : [];
  });
  const claimed = cases.filter((c) => c.claimSeconds !== undefined).map((c) => c.id);
  const wake =
    claimed.length === cases.length
      ? sql``
      : claimed.length === 0
        ? sql`, (SELECT pg_notify(${JOBS_CHANNEL}, ${notify}) FROM kase LIMIT 1) AS notified`
        : sql`, (SELECT pg_notify(${JOBS_CHANNEL}, ${notify}) FROM kase
            WHERE kase.id <> ALL(${claimed}::uuid[]) LIMIT 1) AS notified`;
  const { rows } = await sql<{ id: string; created_at: Date }>`
    WITH kase AS (${insert})${sql.join(extra, sql``)}
    SELECT kase.id, kase.created_at${wake}
    FROM kase`.execute(db);
  return new Map(rows.map((r) => [r.id, r.created_at]));
}

export function findCaseByIdempotencyKey(db: Executor, tenantId: string, key: string) {
  return findRow(db, "cases", { tenant_id: tenantId, idempotency_key: key });
}

/** Reads and locks the case for the rest of the transaction: one writer per case at a time. */
export async function lockCase(tx: Executor, tenantId: string, caseId: string): Promise<CaseRow | undefined> {
  if (!isUuid(caseId)) return undefined;
  return findRow(tx, "cases", { tenant_id: tenantId, id: caseId }, { forUpdate: true });
}

/**
 * Reads and locks the cases (the engine's batches). Locks are taken in id order, so batches that
 * share cases wait for each other instead of deadlocking. Tenant checks are the caller's: the ids
 * come from the jobs the cases' own steps wrote.
 */
export async function lockCases(tx: Executor, caseIds: string[]): Promise<CaseRow[]> {
  if (caseIds.length === 0) return [];
  return tx.selectFrom("cases").selectAll().where("id", "in", caseIds).orderBy("id").forUpdate().execute();
}

/** The case by id alone, for the operator API (operators act across tenants). */
export async function findCaseAnyTenant(
  db: Executor,
  caseId: string,
  lock = false,
): Promise<CaseRow | undefined> {
  if (!isUuid(caseId)) return undefined;
  return findRow(db, "cases", { id: caseId }, { forUpdate: lock });
}

export type CasePatch = Updateable<CasesTable>;

export async function updateCase(
  tx: Executor,
  tenantId: string,
  caseId: string,
  patch: CasePatch,
): Promise<void> {
  await updateRows(tx, "cases", { tenant_id: tenantId, id: caseId }, { ...patch, updated_at: new Date() });
}

/** The tenant's case, or undefined for an unknown id, a malformed id or another tenant's case. */
export async function findCase(db: Executor, tenantId: string, caseId: string): Promise<CaseRow | undefined> {
  if (!isUuid(caseId)) return undefined;
  return findRow(db, "cases", { tenant_id: tenantId, id: caseId });
}

/** Whether the tenant has this case, without reading it. */
export async function caseExists(db: Executor, tenantId: string, caseId: string): Promise<boolean> {
  return (await findCaseFacts(db, tenantId, caseId)) !== undefined;
}

export interface CaseFilters {
  status?: string;
  type?: string;
  workflowId?: string;
  decision?: string;
  tag?: string;
  externalCustomerId?: string;
  createdFrom?: Date;
  createdTo?: Date;
}

/**
 * A page of the tenant's cases, newest first, after the keyset position `after` (exclusive);
 * dry-run cases only with `dryRun: true`.
 */
export function listCases(
  db: Executor,
  tenantId: string,
  filters: CaseFilters & { dryRun?: boolean },
  limit: number,
  after: { createdAt: Date; id: string } | undefined,
): Promise<CaseRow[]> {
  return pageOfCases(db, tenantId, { ...filters, dryRun: filters.dryRun === true }, limit, after);
}

/**
 * A page of cases across tenants (`tenantId` undefined) or of one, for the operator API, newest
 * first; dry-run cases only with `dryRun: true`.
 */
export function listCasesForOperator(
  ...[db, tenantId, filters, limit, after]: Parameters<typeof pageOfCases>
) {
  return pageOfCases(db, tenantId, { ...filters, dryRun: filters.dryRun === true }, limit, after);
}

function pageOfCases(
  db: Executor,
  tenantId: string | undefined,
  filters: CaseFilters & { dryRun?: boolean },
  limit: number,
  after: { createdAt: Date; id: string } | undefined,
): Promise<CaseRow[]> {
  let query = db.selectFrom("cases").selectAll();
  if (tenantId !== undefined) query = query.where("tenant_id", "=", tenantId);
  if (filters.dryRun !== undefined) query = query.where("dry_run", "=", filters.dryRun);
  if (filters.status) query = query.where("status", "=", filters.status);
  if (filters.type) query = query.where("type", "=", filters.type);
  if (filters.workflowId) query = query.where("workflow_id", "=", filters.workflowId);
  if (filters.externalCustomerId)
    query = query.where("external_customer_id", "=", filters.externalCustomerId);
  if (filters.decision) query = query.where(sql`decision->>'value'`, "=", filters.decision);
  if (filters.createdFrom) query = query.where("created_at", ">=", filters.createdFrom);
  if (filters.createdTo) query = query.where("created_at", "<", filters.createdTo);
  if (filters.tag) {
    const tag = filters.tag;
    query = query.where(({ exists, selectFrom }) =>
      exists(
        selectFrom("case_tags")
          .select("case_tags.id")
          .whereRef("case_tags.case_id", "=", "cases.id")
          .whereRef("case_tags.tenant_id", "=", "cases.tenant_id")
          .where("case_tags.tag", "=", tag),
      ),
    );
  }
  const position = after && ([after.createdAt, after.id] as const);
  return keysetPage(query, ["created_at", "id"], "desc", position, limit).execute();
}

/** A case's new state after a step, as the engine writes it with the other cases of its batch. */
export interface CaseStateWrite {
  caseId: string;
  tenantId: string;
  status: string;
  stepSeq: number;
  currentNodeId: string | null;
  nodeOutputs: Record<string, unknown>;
  decision: unknown;
  decisionHistory: unknown[];
  workflowResult: unknown;
  error: unknown;
  /**
   * Written only while the case still waits to start with this run counted: a starter that ran it
   * from the row its insert wrote, without reading and locking it, checks its claim here.
   */
  startedAs?: number;
}

/**
 * The update of a batch of cases' states, as one part of a larger statement: the engine writes
 * a batch of steps, the cases' new states, their waits and their jobs in one round trip, and
 * this is the cases table's share of it, kept here with the table's other writes.
 */
export function caseStatesUpdate(states: CaseStateWrite[], now: Date): RawBuilder<unknown> {
  const rows = sql.join(
    states.map((c) => {
      const values = [
        sql`${c.caseId}::uuid`,
        sql`${c.tenantId}::uuid`,
        sql`${c.status}::text`,
        sql`${c.stepSeq}::int`,
        sql`${c.currentNodeId}::text`,
        sql`${JSON.stringify(c.nodeOutputs)}::jsonb`,
        sql`${jsonOrNull(c.decision)}::jsonb`,
        sql`${JSON.stringify(c.decisionHistory)}::jsonb`,
        sql`${jsonOrNull(c.workflowResult)}::json`,
        sql`${jsonOrNull(c.error)}::jsonb`,
        sql`${c.startedAs ?? null}::int`,
      ];
      return sql`(${sql.join(values)})`;
    }),
  );
  return sql`
    UPDATE cases c
    SET status = v.status, step_seq = v.step_seq, current_node_id = v.current_node_id,
        node_outputs = v.node_outputs, decision = v.decision, decision_history = v.decision_history,
        workflow_result = v.workflow_result, error = v.error, updated_at = ${now}::timestamptz
    FROM (VALUES ${rows}) AS v(id, tenant_id, status, step_seq, current_node_id, node_outputs, decision,
                                 decision_history, workflow_result, error, started_as)
    WHERE c.id = v.id AND c.tenant_id = v.tenant_id
      AND (v.started_as IS NULL OR (c.status = 'received' AND c.start_attempts = v.started_as))
    RETURNING c.id`;
}

/**
 * A parsed request body's document as the table gives it back: itself, unless it holds a number
 * JSON cannot write (a literal such as 1e309 parses to Infinity and is stored as null; -0 is
 * stored as 0), in which case its stored text parsed again. The engine then decides on what the
 * case record shows, and what a replay of it would read.
 */
function asStored<T>(doc: T): T {
  return storesAsIs(doc) ? doc : (JSON.parse(JSON.stringify(doc)) as T);
}

function storesAsIs(value: unknown): boolean {
  if (typeof value === "number") return Number.isFinite(value) && !Object.is(value, -0);
  if (value === null || typeof value !== "object") return true;
  if (Array.isArray(value)) return value.every(storesAsIs);
  for (const key in value) {
    if (!storesAsIs((value as Record<string, unknown>)[key])) return false;
  }
  return true;
}

/**
 * A case as `insertCases` wrote it, claimed for this process's starter: what reading it back
 * would give, without the read (decision 0028). `createdAt` is the time the statement gave it.
 */
export function insertedCaseRow(c: NewCase, createdAt: Date): CaseRow {
  // The defaults before the spread: a spread's copy takes no property after it (decision 0038).
  return {
    decision: null,
    decision_history: [],
    workflow_result: null,
    error: null,
    step_seq: 0,
    node_outputs: {},
    closed_at: null,
    closed_by: null,
    assignee_id: null,
    assigned_at: null,
    start_attempts: c.claimSeconds === undefined ? 0 : 1,
    start_claimed_until: null,
    ...newCaseColumns(c, asStored(c.subject), asStored(c.payload), asStored(c.metadata), createdAt),
  };
}

/**
 * Claims cases waiting to start, oldest first, for a starter (decision 0011): up to `limit` that
 * never ran (`fresh`), or the oldest one that did (`again`: a run of it began and never
 * finished, as when its process died). The statement counts a run of each (`start_attempts`)
 * and leases them for `leaseSeconds`, and it commits on its own, before the run: a run that ends
 * its process is counted all the same. Cases another transaction holds, or that another starter
 * leased, are skipped, so that starters in any number of processes share the work. Tenant
 * checks are not needed: every case runs on its own tenant's workflow.
 */
export async function claimReceivedCases(
  db: Executor,
  which: "fresh" | "again",
  limit: number,
  leaseSeconds: number,
): Promise<StartClaim[]> {
  const ran = which === "fresh" ? sql`start_attempts = 0` : sql`start_attempts > 0`;
  // A fresh claim gives each case's row as the claim left it: its batch runs from it, unread
  // and unlocked, as from a handed case's. A case claimed again is read and locked alone.
  const { rows } = await sql<CaseRow>`
    WITH next AS (
      SELECT id FROM cases
      WHERE status = 'received' AND current_node_id IS NOT NULL AND ${ran}
        AND (start_claimed_until IS NULL OR start_claimed_until < now())
      ORDER BY created_at, id
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    )
    UPDATE cases c
    SET start_attempts = c.start_attempts + 1,
        start_claimed_until = now() + make_interval(secs => ${leaseSeconds})
    FROM next WHERE c.id = next.id
    RETURNING ${which === "fresh" ? sql`c.*` : sql`c.id, c.start_attempts`}`.execute(db);
  return rows.map((row) => ({
    id: row.id,
    start_attempts: row.start_attempts,
    ...(which === "fresh" ? { row } : {}),
  }));
}

/**
 * Gives back cases that were inserted claimed for a starter which stops before running them:
 * they wait for any starter again, and the run counted for them is taken back, since none began.
 */
export async function releaseClaimedCases(db: Executor, claims: readonly StartClaim[]): Promise<void> {
  if (claims.length === 0) return;
  await sql`
    WITH released AS (
      UPDATE cases SET start_attempts = start_attempts - 1, start_claimed_until = NULL
      WHERE id = ANY(${claims.map((c) => c.id)}::uuid[]) AND status = 'received' AND start_attempts = 1
      RETURNING id
    )
    SELECT (SELECT pg_notify(${JOBS_CHANNEL}, ${START_NOTIFICATION}) FROM released LIMIT 1)`.execute(db);
}

/** Whether a case whose run began and never finished waits to be claimed again. */
export async function hasReceivedCaseToRunAgain(db: Executor): Promise<boolean> {
  const { rows } = await sql`
    SELECT 1 FROM cases
    WHERE status = 'received' AND current_node_id IS NOT NULL AND start_attempts > 0
      AND (start_claimed_until IS NULL OR start_claimed_until < now())
    ORDER BY created_at, id
    LIMIT 1`.execute(db);
  return rows.length > 0;
}

/**
 * Locks claimed cases for the rest of the transaction, leaving out those no longer waiting to
 * start or claimed again since (their lease ran out and another starter counted a run).
 */
export async function lockClaimedCases(tx: Executor, claims: StartClaim[]): Promise<CaseRow[]> {
  const attempts = new Map(claims.map((c) => [c.id, c.start_attempts]));
  const rows = await lockCases(tx, [...attempts.keys()]);
  return rows.filter((r) => r.status === "received" && r.start_attempts === attempts.get(r.id));
}

/** What other modules need to know of a case to act on it: its tenant, type, status, dry run. */
export interface CaseFacts {
  id: string;
  tenant_id: string;
  type: string;
  status: string;
  dry_run: boolean;
}

/** The tenant's case, or undefined for an unknown, malformed or another tenant's id. */
export async function findCaseFacts(
  db: Executor,
  tenantId: string,
  caseId: string,
): Promise<CaseFacts | undefined> {
  if (!isUuid(caseId)) return undefined;
  return db
    .selectFrom("cases")
    .select(["id", "tenant_id", "type", "status", "dry_run"])
    .where("tenant_id", "=", tenantId)
    .where("id", "=", caseId)
    .executeTakeFirst();
}

/** The tenant owning a case, for operator routes that address a case by id alone. */
export async function findCaseTenant(db: Executor, caseId: string): Promise<string | undefined> {
  if (!isUuid(caseId)) return undefined;
  const row = await db.selectFrom("cases").select("tenant_id").where("id", "=", caseId).executeTakeFirst();
  return row?.tenant_id;
}

/**
 * The ids of the tenant's cases whose current decision is this one (a subquery, for others'
 * filters; the tenant and the decision may be the outer query's columns).
 */
export function casesDecided(
  db: Executor,
  tenantId: string | Expression<string>,
  decision: string | Expression<string>,
) {
  return db
    .selectFrom("cases")
    .select("id")
    .where("tenant_id", "=", tenantId)
    .where(sql<string>`decision->>'value'`, "=", decision);
}

/** The tenant's cases of these ids (unknown ids left out), in no particular order. */
export async function findCases(db: Executor, tenantId: string, caseIds: string[]): Promise<CaseRow[]> {
  const ids = caseIds.filter(isUuid);
  if (ids.length === 0) return [];
  return db
    .selectFrom("cases")
    .selectAll()
    .where("tenant_id", "=", tenantId)
    .where("id", "in", ids)
    .execute();
}

/**
 * The tenant's cases of a workflow (any version) accepted in `[from, to)`, dry runs left out,
 * as a subquery of `(id, created_at)` (a backtest chooses its cases from it).
 */
export function casesOfWorkflow(
  db: Executor,
  tenantId: string,
  window: { workflowId: string; from: Date; to: Date; caseType?: string },
) {
  let query = db
    .selectFrom("cases")
    .select(["id", "created_at"])
    .where("tenant_id", "=", tenantId)
    .where("workflow_id", "=", window.workflowId)
    .where("created_at", ">=", window.from)
    .where("created_at", "<", window.to)
    .where("dry_run", "=", false);
  if (window.caseType !== undefined) query = query.where("type", "=", window.caseType);
  return query;
}

/** Whether new cases wait to be started (through the index of received cases): live work is queued. */
export async function casesWaitingToStart(db: Executor): Promise<boolean> {
  const { rows } = await sql<{ waiting: boolean }>`
    SELECT EXISTS (SELECT 1 FROM cases WHERE status = 'received') AS waiting`.execute(db);
  return rows[0]?.waiting === true;
}
