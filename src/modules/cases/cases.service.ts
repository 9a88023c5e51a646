import type { Static } from "typebox";
import { Batcher } from "../../platform/batcher.js";
import type { AppContext } from "../../platform/context.js";
import { orderedUuid } from "../../platform/crypto.js";
import type { Db, Executor } from "../../platform/db/index.js";
import { AppError, badRequest, describeProblems, type ErrorDetail, notFound } from "../../platform/errors.js";
import { type AuthenticatedKey, confirmKey } from "../auth/index.js";
import { CASE_TYPES, type CaseType } from "../case-model/index.js";
import type { CompiledWorkflow } from "../workflows/index.js";
import {
  checkTenantRequirements,
  getCompiledWorkflow,
  requireVersion,
  resolveSubmissionTarget,
  resolveSubmissionWorkflow,
} from "../workflows/index.js";
import {
  type CaseFilters,
  type CaseRow,
  findCase,
  findCaseByIdempotencyKey,
  insertCases,
  insertedCaseRow,
  listCases,
  type NewCase,
  START_NOTIFICATION,
} from "./cases.repo.js";
import type { AdminCaseRecord, CaseRecord } from "./cases.schemas.js";
import type { CaseRecordParts } from "./cases.seam.js";
import {
  checkSubmission,
  parseRfc3339,
  type SubmissionFacts,
  type SubmissionShape,
} from "./cases.validation.js";

export interface CaseSubmissionInput {
  workflowId: string;
  workflowVersion?: number;
  type: CaseType;
  payload?: Record<string, unknown>;
  subject: Record<string, unknown>;
  metadata?: Record<string, unknown>;
  idempotencyKey?: string;
  eventTimestamp?: string;
}

export interface SubmissionResult {
  created: boolean;
  body: { caseId: string; requestId: string; status: string };
}

function submissionBody(row: CaseRow) {
  return { caseId: row.id, requestId: row.request_id, status: row.status };
}

interface Collected {
  problems: ErrorDetail[];
  wf: CompiledWorkflow | undefined;
  facts: SubmissionFacts;
}

/** Every problem of a submission against the contract and its workflow, with what was derived. */
async function collect(
  ctx: AppContext,
  input: SubmissionShape,
  loadWorkflow: (() => Promise<CompiledWorkflow>) | undefined,
): Promise<Collected> {
  const problems: ErrorDetail[] = [];
  const facts = checkSubmission(input, new Date(), ctx.config.maxEventSkewSeconds, problems);
  let wf: CompiledWorkflow | undefined;
  try {
    wf = await loadWorkflow?.();
  } catch (err) {
    if (!(err instanceof AppError) || err.status !== 400) throw err;
    problems.push(...(err.details ?? [{ path: "workflowId", message: err.message }]));
  }
  if (wf && input.payload !== undefined) {
    for (const p of await wf.validatePayload(input.payload, ctx.config.evaluationDeadlineMs)) {
      problems.push({ path: p.path.startsWith("payload") ? p.path : `payload${p.path}`, message: p.message });
    }
  }
  return { problems, wf, facts };
}

/** Validates a submission against the contract and its workflow; throws 400 listing every problem. */
async function prepare(
  ctx: AppContext,
  input: CaseSubmissionInput,
  loadWorkflow: () => Promise<CompiledWorkflow>,
): Promise<{ wf: CompiledWorkflow; eventTimestamp: Date | null; externalCustomerId: string | null }> {
  const { problems, wf, facts } = await collect(
    ctx,
    { ...input, payload: input.payload ?? {} },
    loadWorkflow,
  );
  if (problems.length > 0 || !wf)
    throw badRequest(describeProblems("invalid case submission", problems), problems);
  return { wf, ...facts };
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The submission rules beyond the body schema, run on a body the schema refused (so one answer
 * lists every problem): each rule runs only on the parts of the body it can read.
 */
export async function submissionProblems(
  ctx: AppContext,
  tenantId: string,
  body: unknown,
  workflow?: { workflowId: string; version: number },
): Promise<ErrorDetail[]> {
  const b = isObject(body) ? body : {};
  const type = CASE_TYPES.find((t) => t === b.type);
  const input: SubmissionShape = {
    type,
    subject: isObject(b.subject) ? b.subject : {},
    eventTimestamp: typeof b.eventTimestamp === "string" ? b.eventTimestamp : undefined,
    payload: isObject(b.payload) ? b.payload : undefined,
  };
  const version = b.workflowVersion;
  let load: (() => Promise<CompiledWorkflow>) | undefined;
  if (workflow) {
    load = async () => {
      const wf = await getCompiledWorkflow(
        ctx.nodeTypes,
        ctx.db.root,
        tenantId,
        workflow.workflowId,
        workflow.version,
      );
      if (!wf) throw notFound("workflow version");
      return wf;
    };
  } else if (typeof b.workflowId === "string" && (version === undefined || Number.isInteger(version))) {
    load = () =>
      resolveSubmissionWorkflow(
        ctx.nodeTypes,
        ctx.db.root,
        tenantId,
        b.workflowId as string,
        version as number,
      );
  }
  return (await collect(ctx, input, load)).problems;
}

const insertBatches = new WeakMap<Db, Batcher<NewCase, boolean>>();

/**
 * Inserts of concurrent submissions share one statement (see Batcher); true when inserted. A new
 * case is `received` at its workflow's start node, and the engine's starters take it from there.
 */
function caseInserts(ctx: AppContext): Batcher<NewCase, boolean> {
  const db = ctx.db;
  let batcher = insertBatches.get(db);
  if (!batcher) {
    batcher = new Batcher(
      async (items) => {
        // As many as this process's starter takes go in claimed for it (dry runs too).
        const handoff = ctx.cases.starts.reserve(items.length);
        const claimSeconds = ctx.config.jobLeaseSeconds;
        const rows = handoff
          ? items.map((item, i) => (i < handoff.count ? { ...item, claimSeconds } : item))
          : items;
        let inserted: Map<string, Date>;
        try {
          inserted = await insertCases(db.root, rows, START_NOTIFICATION, ctx.cases.onAccept);
        } catch (err) {
          handoff?.taker.take([], handoff.count);
          throw err;
        }
        if (handoff) {
          const claims = rows.slice(0, handoff.count).flatMap((c) => {
            const createdAt = inserted.get(c.id);
            return createdAt === undefined
              ? []
              : [{ id: c.id, start_attempts: 1, row: insertedCaseRow(c, createdAt) }];
          });
          handoff.taker.take(claims, handoff.count - claims.length);
        }
        return items.map((i) => inserted.has(i.id));
      },
      { maxBatch: 128, lanes: 1 },
    );
    insertBatches.set(db, batcher);
  }
  return batcher;
}

async function insertAndStart(
  ctx: AppContext,
  tenantId: string,
  input: CaseSubmissionInput,
  prepared: Awaited<ReturnType<typeof prepare>>,
  requestId: string,
  dryRun: boolean,
  confirm: { confirmCurrent?: boolean; confirmKeyId?: string | undefined } = {},
): Promise<NewCase | undefined> {
  const { wf } = prepared;
  const kase: NewCase = {
    id: orderedUuid(),
    tenantId,
    requestId,
    status: "received",
    type: input.type,
    workflowId: wf.workflowId,
    workflowVersion: wf.version,
    subject: input.subject,
    payload: input.payload ?? {},
    metadata: input.metadata ?? {},
    externalCustomerId: prepared.externalCustomerId,
    eventTimestamp: prepared.eventTimestamp,
    idempotencyKey: dryRun ? null : (input.idempotencyKey ?? null),
    dryRun,
    currentNodeId: wf.start,
    // Every property a copy of it may set, present from the start: the copy that claims it for
    // this process's starter then only changes one (decision 0038).
    claimSeconds: undefined,
    confirmCurrent: confirm.confirmCurrent === true,
    confirmKeyId: confirm.confirmKeyId || undefined,
  };
  const inserted = await caseInserts(ctx).add(kase);
  return inserted ? kase : undefined;
}

/**
 * `POST /cases`. A known idempotency key answers with its case before anything else is checked;
 * a new case is inserted `received`, in one statement shared with concurrent submissions, for
 * the engine's starters to run. Of concurrent
 * submissions with one key, the unique index lets exactly one insert; the others read its case.
 */
export async function submitCase(
  ctx: AppContext,
  key: AuthenticatedKey,
  input: CaseSubmissionInput,
  requestId: string,
): Promise<SubmissionResult> {
  const { tenantId } = key;
  const idempotencyKey = input.idempotencyKey;
  if (idempotencyKey !== undefined) {
    const existing = await findCaseByIdempotencyKey(ctx.db.root, tenantId, idempotencyKey);
    if (existing) return { created: false, body: submissionBody(existing) };
  }
  // The version is first taken from what this process has seen; if another was published since,
  // the insert refuses the case and the submission looks again (decision 0028).
  for (let fresh = false; ; fresh = true) {
    let confirmCurrent = false;
    const prepared = await prepare(ctx, input, async () => {
      const target = await resolveSubmissionTarget(
        ctx.nodeTypes,
        ctx.db.root,
        { tenantId, workflowId: input.workflowId, version: input.workflowVersion },
        fresh,
      );
      confirmCurrent = target.confirmCurrent;
      return target.wf;
    });
    const confirmKeyId = key.confirmed ? undefined : key.keyId;
    const kase = await insertAndStart(ctx, tenantId, input, prepared, requestId, false, {
      confirmCurrent,
      confirmKeyId,
    });
    if (kase) {
      // The insert found the key live.
      key.confirmed = true;
      return { created: true, body: { caseId: kase.id, requestId: kase.requestId, status: kase.status } };
    }
    const winner =
      idempotencyKey === undefined
        ? undefined
        : await findCaseByIdempotencyKey(ctx.db.root, tenantId, idempotencyKey);
    if (winner) return { created: false, body: submissionBody(winner) };
    // Refused for its key (401 if it is gone) or for its version: look both up and try again.
    await confirmKey(ctx, key);
    if (!confirmCurrent && confirmKeyId === undefined)
      throw new Error("a case insert was skipped without an idempotency key to explain it");
  }
}

/** How long a dry run with `wait` waits for its case to leave `received` and `running`. */
export const DRY_RUN_WAIT_MS = 30_000;

/**
 * The operator's dry run: a case on the given version, published or not, marked `dryRun`. With
 * `wait`, the answer comes once the workflow has stopped running the case (decided, waiting,
 * failed), or after DRY_RUN_WAIT_MS, with the trace of what it did.
 */
export async function dryRunCase(
  ctx: AppContext,
  tenantId: string,
  workflowId: string,
  version: number,
  input: Omit<CaseSubmissionInput, "workflowId" | "workflowVersion">,
  requestId: string,
  options: { wait?: boolean } = {},
): Promise<AdminCaseRecordView> {
  const wf = await requireVersion(ctx, tenantId, workflowId, version);
  await checkTenantRequirements(ctx.db.root, tenantId, wf);
  const full = { ...input, workflowId, workflowVersion: version };
  const prepared = await prepare(ctx, full, async () => wf);
  const kase = await insertAndStart(ctx, tenantId, full, prepared, requestId, true);
  if (!kase) throw new Error("a dry-run case insert was skipped");
  const row = options.wait
    ? await settled(ctx, tenantId, kase.id, Date.now() + DRY_RUN_WAIT_MS)
    : await findCase(ctx.db.root, tenantId, kase.id);
  if (!row) throw new Error("a dry-run case vanished");
  return adminCaseRecord(ctx.cases.parts, ctx.db.root, row);
}

/** The case once it is no longer `received` or `running`, or as it is at the deadline. */
async function settled(ctx: AppContext, tenantId: string, caseId: string, deadline: number) {
  for (;;) {
    const row = await findCase(ctx.db.root, tenantId, caseId);
    if (!row || !["received", "running"].includes(row.status) || Date.now() >= deadline) return row;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export type AdminCaseRecordView = Static<typeof AdminCaseRecord>;

/** The case record for operators: the partner's view, its tenant and its trace. */
export async function adminCaseRecord(
  parts: CaseRecordParts,
  db: Executor,
  row: CaseRow,
): Promise<AdminCaseRecordView> {
  const [record, trace] = await Promise.all([
    caseRecord(parts, db, row),
    parts.trace(db, row.tenant_id, row.id),
  ]);
  const { caseId, ...rest } = record;
  return { caseId, tenantId: row.tenant_id, ...rest, trace };
}

export type CaseRecordView = Static<typeof CaseRecord>;

/** The full case record of the contract, with its tags and information requests. */
export async function caseRecord(
  parts: CaseRecordParts,
  db: Executor,
  row: CaseRow,
): Promise<CaseRecordView> {
  const [tags, informationRequests] = await Promise.all([
    parts.tags(db, row.tenant_id, row.id),
    parts.informationRequests(db, row.tenant_id, row.id),
  ]);
  // The identity spread last: a spread's copy takes no property after it (decision 0038).
  return {
    subject: row.subject,
    payload: row.payload,
    metadata: row.metadata,
    externalCustomerId: row.external_customer_id,
    eventTimestamp: row.event_timestamp?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    dryRun: row.dry_run,
    result: {
      decision: row.decision,
      decisionHistory: row.decision_history,
      workflow_result: row.workflow_result,
    },
    error: row.error,
    tags,
    informationRequests,
    ...caseIdentity(row),
  };
}

export async function getCase(ctx: AppContext, tenantId: string, caseId: string): Promise<CaseRecordView> {
  const row = await findCase(ctx.db.root, tenantId, caseId);
  if (!row) throw notFound("case");
  return caseRecord(ctx.cases.parts, ctx.db.root, row);
}

/** What a case record and a case summary both begin with. */
function caseIdentity(row: CaseRow) {
  return {
    caseId: row.id,
    requestId: row.request_id,
    status: row.status,
    type: row.type,
    workflowId: row.workflow_id,
    workflowVersion: row.workflow_version,
  };
}

/** The tenant's cases of these ids as `GET /cases` lists them, in the order of the ids. */
export async function getCaseSummaries(ctx: AppContext, tenantId: string, caseIds: readonly string[]) {
  if (caseIds.length === 0) return [];
  const rows = await ctx.db.root
    .selectFrom("cases")
    .selectAll()
    .where("tenant_id", "=", tenantId)
    .where("id", "in", [...caseIds])
    .execute();
  const byId = new Map(rows.map((r) => [r.id, r]));
  return caseIds.flatMap((id) => {
    const row = byId.get(id);
    return row ? [caseSummary(row)] : [];
  });
}

export function caseSummary(row: CaseRow) {
  // The identity spread last, as in `caseRecord` (decision 0038): a row of every case list.
  return {
    displayName: typeof row.subject.displayName === "string" ? row.subject.displayName : null,
    externalCustomerId: row.external_customer_id,
    decision: row.decision,
    dryRun: row.dry_run,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    ...caseIdentity(row),
  };
}

export interface CaseListQuery extends Omit<CaseFilters, "createdFrom" | "createdTo"> {
  createdFrom?: string;
  createdTo?: string;
  limit?: number;
  cursor?: string;
  dryRun?: boolean;
}

function encodeCursor(row: CaseRow): string {
  return Buffer.from(`${row.created_at.toISOString()}|${row.id}`).toString("base64url");
}

/** What `encodeCursor` writes, exactly: anything else would reach the database as a bad timestamp or uuid. */
const CURSOR =
  /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)\|([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

function decodeCursor(cursor: string): { createdAt: Date; id: string } {
  const match = CURSOR.exec(Buffer.from(cursor, "base64url").toString("utf8"));
  const createdAt = match?.[1] ? new Date(match[1]) : undefined;
  const id = match?.[2];
  if (!createdAt || Number.isNaN(createdAt.getTime()) || !id) {
    throw badRequest("cursor is not one this service returned", [{ path: "cursor", message: "is invalid" }]);
  }
  return { createdAt, id };
}

/** A list query's filters, page size and keyset position; 400 naming every bad parameter. */
export function parseListQuery(query: CaseListQuery): {
  filters: CaseFilters;
  limit: number;
  after: { createdAt: Date; id: string } | undefined;
} {
  const problems: ErrorDetail[] = [];
  const time = (name: "createdFrom" | "createdTo") => {
    const raw = query[name];
    if (raw === undefined) return undefined;
    const parsed = parseRfc3339(raw);
    if (!parsed) problems.push({ path: name, message: "must be an RFC 3339 timestamp with an offset" });
    return parsed;
  };
  const filters: CaseFilters = { ...query, createdFrom: time("createdFrom"), createdTo: time("createdTo") };
  if (problems.length > 0)
    throw badRequest(`invalid query: ${problems.map((p) => `${p.path} ${p.message}`).join("; ")}`, problems);
  return { filters, limit: query.limit ?? 25, after: query.cursor ? decodeCursor(query.cursor) : undefined };
}

/** A page of rows fetched one beyond the limit, and the cursor of the next page (null on the last). */
export function pageOf<T>(rows: CaseRow[], limit: number, view: (row: CaseRow) => T) {
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return { cases: page.map(view), nextCursor: rows.length > limit && last ? encodeCursor(last) : null };
}

/** `GET /cases`: newest first, keyset-paged (stable while cases are added). */
export async function listTenantCases(ctx: AppContext, tenantId: string, query: CaseListQuery) {
  const { filters, limit, after } = parseListQuery(query);
  const rows = await listCases(ctx.db.root, tenantId, { ...filters, dryRun: query.dryRun }, limit + 1, after);
  return pageOf(rows, limit, caseSummary);
}
