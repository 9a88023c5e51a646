import type { AppContext } from "../../platform/context.js";
import { isUuid, uuid } from "../../platform/crypto.js";
import type { Tx } from "../../platform/db/index.js";
import { AppError, badRequest, notFound } from "../../platform/errors.js";
import { CASE_TYPES, type CaseStatus, isTerminal } from "../case-model/index.js";
import { getUsers, insertAudit } from "../users/index.js";
import { findCase, lockCases } from "./cases.repo.js";
import {
  type CaseFilterRow,
  type CommentRow,
  caseComments,
  caseFilters,
  deleteCaseFilter,
  insertCaseFilter,
  insertComment,
  putReviewSla,
  reviewSlas,
  setAssignee,
} from "./casework.repo.js";

// An analyst's work on the tenant's cases. Every change writes its audit row in its own
// transaction, so that there is never a change without its row, nor a row without its change.

/** Who acts: the audit log's label (`analyst:<id>`), the user, and whether they may act for others. */
export interface Worker {
  tenantId: string;
  actor: string;
  userId: string;
  admin: boolean;
}

export interface CommentView {
  commentId: string;
  author: string;
  body: string;
  createdAt: string;
}

const MAX_COMMENT = 4000;
const MAX_BULK = 200;

function commentView(row: CommentRow): CommentView {
  return { commentId: row.id, author: row.author, body: row.body, createdAt: row.created_at.toISOString() };
}

async function lockTenantCases(tx: Tx, tenantId: string, caseIds: readonly string[]) {
  if (!caseIds.every(isUuid)) throw notFound("case");
  const rows = (await lockCases(tx, [...new Set(caseIds)])).filter((r) => r.tenant_id === tenantId);
  if (rows.length !== new Set(caseIds).size) throw notFound("case");
  return rows;
}

/** Whether the worker may act on a case of this owner: analysts on their own and on nobody's, admins on any. */
export function mayWork(who: Pick<Worker, "userId" | "admin">, assigneeId: string | null): boolean {
  return who.admin || assigneeId === null || assigneeId === who.userId;
}

/**
 * Refuses (409) an analyst's decision, close or provider action on a case another analyst owns
 * (see `mayWork`); 404 for a case that is not the tenant's.
 */
export async function requireWork(ctx: AppContext, who: Worker, caseId: string): Promise<void> {
  const row = await findCase(ctx.db.root, who.tenantId, caseId);
  if (!row) throw notFound("case");
  if (!mayWork(who, row.assignee_id))
    throw new AppError("conflict", "Another analyst owns this case: only they, or an admin, act on it.");
}

/** A case's internal comments, oldest first. Never part of the partner's case record. */
export async function getComments(ctx: AppContext, tenantId: string, caseId: string): Promise<CommentView[]> {
  return (await caseComments(ctx.db.root, tenantId, caseId)).map(commentView);
}

/** Adds an internal comment to a case (any user who may review may comment, on any case). */
export async function addComment(
  ctx: AppContext,
  who: Worker,
  caseId: string,
  body: string,
): Promise<CommentView> {
  const text = body.trim();
  if (text.length === 0 || text.length > MAX_COMMENT)
    throw badRequest(`a comment holds 1 to ${MAX_COMMENT} characters`, [
      { path: "body", message: `Write 1 to ${MAX_COMMENT} characters.` },
    ]);
  return ctx.db.transaction(async (tx) => {
    await lockTenantCases(tx, who.tenantId, [caseId]);
    const row = await insertComment(tx, {
      id: uuid(),
      tenantId: who.tenantId,
      caseId,
      author: who.actor,
      body: text,
    });
    await insertAudit(tx, who, "case.comment", `case:${caseId}`, {
      after: { commentId: row.id, body: text },
    });
    return commentView(row);
  });
}

/**
 * Gives cases an owner, or none. An analyst takes cases that nobody owns (or already theirs) and
 * releases their own; an admin assigns and releases any. A case owned by someone else is a 409
 * for an analyst; a closed or failed case takes no owner. One audit row per case changed.
 */
export async function assignCases(
  ctx: AppContext,
  who: Worker,
  caseIds: readonly string[],
  assigneeId: string | null,
): Promise<{ changed: number }> {
  if (caseIds.length === 0) throw badRequest("choose at least one case");
  if (caseIds.length > MAX_BULK) throw badRequest(`at most ${MAX_BULK} cases at once`);
  if (!who.admin && assigneeId !== null && assigneeId !== who.userId)
    throw new AppError("forbidden", "Only an admin assigns cases to someone else.");
  if (assigneeId !== null && !(await getUsers(ctx, who.tenantId)).some((u) => u.userId === assigneeId))
    throw badRequest("no such user", [{ path: "assignee", message: "is not one of your users" }]);
  return ctx.db.transaction(async (tx) => {
    const rows = await lockTenantCases(tx, who.tenantId, caseIds);
    const changed = rows.filter((r) => r.assignee_id !== assigneeId);
    for (const row of changed) {
      if (assigneeId !== null && isTerminal(row.status as CaseStatus))
        throw new AppError("conflict", `the case ${row.id} is ${row.status}: it needs no owner`);
      if (!who.admin && row.assignee_id !== null && row.assignee_id !== who.userId)
        throw new AppError("conflict", "Another analyst owns this case: ask an admin to reassign it.");
    }
    await setAssignee(
      tx,
      who.tenantId,
      changed.map((r) => r.id),
      assigneeId,
    );
    for (const row of changed) {
      await insertAudit(tx, who, assigneeId === null ? "case.release" : "case.assign", `case:${row.id}`, {
        before: { assignee: row.assignee_id },
        after: { assignee: assigneeId },
      });
    }
    return { changed: changed.length };
  });
}

/** The tenant's review deadlines by case type, in hours. */
export async function getReviewSlas(ctx: AppContext, tenantId: string): Promise<Map<string, number>> {
  return reviewSlas(ctx.db.root, tenantId);
}

/** Sets the review deadlines of the case types (a type left out, or null, has none). */
export async function setReviewSlas(
  ctx: AppContext,
  who: Worker,
  hours: Record<string, number | null>,
): Promise<void> {
  for (const [type, h] of Object.entries(hours)) {
    if (!(CASE_TYPES as readonly string[]).includes(type)) throw badRequest(`unknown case type "${type}"`);
    if (h !== null && (!Number.isInteger(h) || h < 1 || h > 8760))
      throw badRequest("a deadline is 1 to 8760 hours", [{ path: type, message: "Give 1 to 8760 hours." }]);
  }
  await ctx.db.transaction(async (tx) => {
    const before = await reviewSlas(tx, who.tenantId);
    for (const [type, h] of Object.entries(hours)) await putReviewSla(tx, who.tenantId, type, h);
    await insertAudit(tx, who, "review_sla.set", "review_sla", {
      before: Object.fromEntries(before),
      after: Object.fromEntries(Object.entries(hours).filter(([, h]) => h !== null)),
    });
  });
}

/** The tenant's saved filters of the "All cases" view, by name. */
export async function getCaseFilters(ctx: AppContext, tenantId: string): Promise<CaseFilterRow[]> {
  return caseFilters(ctx.db.root, tenantId);
}

/** Saves a filter (the view's query string) under a name no other filter of the tenant has. */
export async function saveCaseFilter(
  ctx: AppContext,
  who: Worker,
  name: string,
  query: string,
): Promise<CaseFilterRow> {
  const trimmed = name.trim();
  if (trimmed.length === 0 || trimmed.length > 100)
    throw badRequest("a filter's name holds 1 to 100 characters", [
      { path: "name", message: "Name it in 1 to 100 characters." },
    ]);
  if (query.length > 2000) throw badRequest("this filter is too long to save");
  return ctx.db.transaction(async (tx) => {
    const row = await insertCaseFilter(tx, {
      id: uuid(),
      tenantId: who.tenantId,
      name: trimmed,
      query,
      createdBy: who.actor,
    });
    if (!row)
      throw badRequest("a filter of this name exists", [
        { path: "name", message: "A saved filter already has this name." },
      ]);
    await insertAudit(tx, who, "case_filter.save", `case_filter:${row.id}`, {
      after: { name: row.name, query: row.query },
    });
    return row;
  });
}

/** Deletes a saved filter: its author, or an admin. */
export async function removeCaseFilter(ctx: AppContext, who: Worker, filterId: string): Promise<void> {
  await ctx.db.transaction(async (tx) => {
    const [row] = await caseFilters(tx, who.tenantId).then((rows) => rows.filter((r) => r.id === filterId));
    if (!row) throw notFound("saved filter");
    if (!who.admin && row.created_by !== who.actor)
      throw new AppError("forbidden", "Only its author or an admin deletes a saved filter.");
    await deleteCaseFilter(tx, who.tenantId, filterId);
    await insertAudit(tx, who, "case_filter.delete", `case_filter:${row.id}`, {
      before: { name: row.name, query: row.query },
    });
  });
}
