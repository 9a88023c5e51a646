import { type Actor, type AppContext, actorLabel } from "../../platform/context.js";
import { uuid } from "../../platform/crypto.js";
import type { Executor, InSameTransaction, Tx } from "../../platform/db/index.js";
import { AppError, notFound } from "../../platform/errors.js";
import { isCaseStatus, isTerminal } from "../case-model/index.js";
import { type CaseFacts, findCaseFacts, findCaseTenant } from "../cases/index.js";
import { insertAudit } from "../users/index.js";
import { webhookKeyExists } from "../webhooks/index.js";
import { emitRequested } from "./rfi.events.js";
import { resumeClosedRequest, scheduleExpiry } from "./rfi.jobs.js";
import { RFI_LIMITS } from "./rfi.limits.js";
import {
  closeRequest,
  countPendingLocked,
  findRequest,
  insertRequest,
  listAttachedSlots,
  listLatestRequests,
  listRequests,
  type NewRequest,
  type RfiRow,
  recordReminder,
} from "./rfi.repo.js";
import { type InformationRequestView, toRequestView } from "./rfi.views.js";

export type { InformationRequestView } from "./rfi.views.js";

/** A request raised through the API (`apikey`) or by an analyst. */
export interface RaiseInput {
  to: string;
  cc?: string[] | undefined;
  subject: string;
  body: string;
  templateId?: string | undefined;
  webhookKey?: string | undefined;
  /** RFC 3339; the deadline after which the request expires. */
  expiresAt?: string | undefined;
}

const invalid = (message: string) => new AppError("invalid_request", message);

/** A request's message as it is stored, raised by a node or through the API: absent options are null. */
export function requestMessage(m: Omit<RaiseInput, "expiresAt">) {
  return {
    to: m.to,
    cc: m.cc && m.cc.length > 0 ? m.cc : null,
    subject: m.subject,
    body: m.body,
    templateId: m.templateId ?? null,
    webhookKey: m.webhookKey ?? null,
  };
}

/** The case of a tenant, 404 when unknown. */
export async function requireCase(db: Executor, tenantId: string, caseId: string): Promise<CaseFacts> {
  const found = await findCaseFacts(db, tenantId, caseId);
  if (!found) throw notFound("case");
  return found;
}

/** The tenant owning the case an operator route names, 404 when unknown. */
export async function tenantOfCase(ctx: AppContext, caseId: string): Promise<string> {
  const tenantId = await findCaseTenant(ctx.db.root, caseId);
  if (!tenantId) throw notFound("case");
  return tenantId;
}

/** Nothing more may happen on a dry-run case's requests, nor on a failed or closed case. */
export function checkCaseOpen(found: CaseFacts): void {
  if (found.dry_run) {
    throw new AppError("dry_run", "the case is a dry run: its information requests cannot be acted on");
  }
  if (isCaseStatus(found.status) && isTerminal(found.status)) {
    throw new AppError("case_terminal", `the case is ${found.status}: nothing more can happen on it`);
  }
}

/** A request still open to answers and uploads: pending and before its deadline. */
export function checkPending(row: RfiRow, now = new Date()): void {
  if (row.status === "pending" && row.expires_at !== null && row.expires_at <= now) {
    throw new AppError("not_pending", `the information request expired at ${row.expires_at.toISOString()}`);
  }
  if (row.status !== "pending") {
    throw new AppError("not_pending", `the information request is ${row.status}, not pending`);
  }
}

export async function requireRequest(
  db: Executor,
  tenantId: string,
  caseId: string,
  rfiId: string,
  lock = false,
): Promise<RfiRow> {
  const row = await findRequest(db, tenantId, caseId, rfiId, lock);
  if (!row) {
    await requireCase(db, tenantId, caseId);
    throw notFound("information request");
  }
  return row;
}

function parseDeadline(raw: string | undefined, now: Date): Date | null {
  if (raw === undefined) return null;
  const deadline = new Date(raw);
  if (!/^\d{4}-\d\d-\d\d[Tt ]/.test(raw) || Number.isNaN(deadline.getTime())) {
    throw invalid("expiresAt must be an RFC 3339 timestamp with an offset");
  }
  if (deadline <= now) throw invalid("expiresAt must be in the future");
  if (deadline.getTime() - now.getTime() > RFI_LIMITS.maxDeadlineDays * 86_400_000) {
    throw invalid(`expiresAt must be at most ${RFI_LIMITS.maxDeadlineDays} days ahead`);
  }
  return deadline;
}

/** Stores a pending request, raises `case.rfi_requested` and schedules the expiry. */
export async function storeRequest(
  tx: Tx,
  request: NewRequest,
  kase: { type: string; dryRun: boolean },
): Promise<RfiRow> {
  const row = await insertRequest(tx, request);
  await emitRequested(tx, row, kase);
  await scheduleExpiry(tx, row);
  return row;
}

/**
 * Raises a request through the API (`source` api) or by an analyst (`source` analyst). The audit
 * row names `auditActor`, by default the actor (the operator API gives `operator:<actor>`).
 */
export async function raiseRequest(
  ctx: AppContext,
  tenantId: string,
  actor: Extract<Actor, { kind: "apikey" | "analyst" }>,
  caseId: string,
  input: RaiseInput,
  auditActor: string = actorLabel(actor),
): Promise<InformationRequestView> {
  const row = await ctx.db.transaction(async (tx) => {
    const found = await requireCase(tx, tenantId, caseId);
    checkCaseOpen(found);
    const expiresAt = parseDeadline(input.expiresAt, new Date());
    // Counted under the case's lock: simultaneous raises cannot pass the limit together.
    if ((await countPendingLocked(tx, caseId)) >= RFI_LIMITS.pendingPerCase) {
      throw new AppError(
        "rfi_limit_reached",
        `the case has ${RFI_LIMITS.pendingPerCase} pending information requests, the most it may have at once: cancel or answer one first`,
      );
    }
    if (input.webhookKey !== undefined && !(await webhookKeyExists(tx, tenantId, input.webhookKey))) {
      throw invalid("webhookKey names no webhook configuration of this tenant");
    }
    const stored = await storeRequest(
      tx,
      {
        id: uuid(),
        tenantId,
        caseId,
        source: actor.kind === "apikey" ? "api" : "analyst",
        requestedBy: actorLabel(actor),
        nodeId: null,
        ...requestMessage(input),
        awaitsResponse: false,
        expiresAt,
      },
      { type: found.type, dryRun: found.dry_run },
    );
    // Whatever the door (the partner's key, the console, the operator), the audit row commits with the request.
    await insertAudit(tx, { tenantId, actor: auditActor }, "rfi.raise", `case:${caseId}`, {
      after: {
        rfiId: stored.id,
        to: input.to,
        subject: input.subject,
        expiresAt: expiresAt?.toISOString() ?? null,
      },
    });
    return stored;
  });
  return toRequestView(row, []);
}

/**
 * The case record's requests: the most recent `RFI_LIMITS.shownPerCase`, oldest first, each with
 * its answer and documents (`GET /cases/{id}/rfi` lists every one).
 */
export async function listCaseInformationRequests(
  db: Executor,
  tenantId: string,
  caseId: string,
): Promise<InformationRequestView[]> {
  return withAnswers(db, tenantId, await listLatestRequests(db, tenantId, caseId, RFI_LIMITS.shownPerCase));
}

async function withAnswers(
  db: Executor,
  tenantId: string,
  rows: RfiRow[],
): Promise<InformationRequestView[]> {
  const answered = rows.filter((r) => r.status === "answered").map((r) => r.id);
  const attached = await listAttachedSlots(db, tenantId, answered);
  return rows.map((row) => toRequestView(row, attached));
}

export async function getRequest(
  ctx: AppContext,
  tenantId: string,
  caseId: string,
  rfiId: string,
): Promise<InformationRequestView> {
  const row = await requireRequest(ctx.db.root, tenantId, caseId, rfiId);
  const attached = row.status === "answered" ? await listAttachedSlots(ctx.db.root, tenantId, [row.id]) : [];
  return toRequestView(row, attached);
}

export async function listRequestsOfCase(
  ctx: AppContext,
  tenantId: string,
  caseId: string,
): Promise<InformationRequestView[]> {
  await requireCase(ctx.db.root, tenantId, caseId);
  return withAnswers(ctx.db.root, tenantId, await listRequests(ctx.db.root, tenantId, caseId));
}

/**
 * An operator's change of a case's request (the tenant is the case's): `change` gets the request,
 * locked, in the transaction, and gives it back as it leaves it; `also` runs in that transaction
 * after a change.
 */
async function changeRequest(
  ctx: AppContext,
  caseId: string,
  rfiId: string,
  also: InSameTransaction<InformationRequestView> | undefined,
  change: (tx: Tx, current: RfiRow, tenantId: string) => Promise<RfiRow>,
): Promise<InformationRequestView> {
  const tenantId = await tenantOfCase(ctx, caseId);
  return ctx.db.transaction(async (tx) => {
    const current = await requireRequest(tx, tenantId, caseId, rfiId, true);
    const row = await change(tx, current, tenantId);
    const view = toRequestView(row, []);
    // A change that changed nothing (the request returned as it was) has nothing to add to.
    if (row !== current) await also?.(tx, view);
    return view;
  });
}

/** Raises the pending request's `case.rfi_requested` again: same `rfi_id`, fresh `webhookId`. */
export function remindRequest(
  ctx: AppContext,
  caseId: string,
  rfiId: string,
  also?: InSameTransaction<InformationRequestView>,
): Promise<InformationRequestView> {
  return changeRequest(ctx, caseId, rfiId, also, async (tx, current, tenantId) => {
    const found = await requireCase(tx, tenantId, caseId);
    checkCaseOpen(found);
    checkPending(current);
    const reminded = await recordReminder(tx, tenantId, rfiId);
    await emitRequested(tx, reminded, { type: found.type, dryRun: found.dry_run });
    return reminded;
  });
}

/**
 * Cancels a pending request; a workflow node waiting on it continues (`onCancelled`).
 * Cancelling a cancelled request again changes nothing; an answered or expired one is 409.
 */
export function cancelRequest(
  ctx: AppContext,
  caseId: string,
  rfiId: string,
  actor: string | undefined,
  also?: InSameTransaction<InformationRequestView>,
): Promise<InformationRequestView> {
  return changeRequest(ctx, caseId, rfiId, also, async (tx, current, tenantId) => {
    if (current.status === "cancelled") return current;
    if (current.status !== "pending") {
      throw new AppError("not_pending", `the information request is ${current.status}, not pending`);
    }
    const cancelled = await closeRequest(tx, tenantId, rfiId, {
      status: "cancelled",
      cancelledBy: actor === undefined ? null : `analyst:${actor}`,
    });
    if (!cancelled) throw new Error("a locked pending request could not be cancelled");
    await resumeClosedRequest(ctx, tx, { tenantId, caseId, rfiId }, "cancelled");
    return cancelled;
  });
}
