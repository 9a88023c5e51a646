import { deleteRows, type Executor, findRows, type Row } from "../../platform/db/index.js";

// An analyst's work on cases: its owner, its internal comments, the review deadlines by case
// type, and the filters saved for the tenant.

export type CommentRow = Row<"case_comments">;
export type CaseFilterRow = Row<"case_filters">;

/** A case's comments, oldest first. */
export function caseComments(db: Executor, tenantId: string, caseId: string): Promise<CommentRow[]> {
  return findRows(db, "case_comments", { tenant_id: tenantId, case_id: caseId }, ["created_at", "id"]);
}

export async function insertComment(
  db: Executor,
  c: { id: string; tenantId: string; caseId: string; author: string; body: string },
): Promise<CommentRow> {
  return db
    .insertInto("case_comments")
    .values({ id: c.id, tenant_id: c.tenantId, case_id: c.caseId, author: c.author, body: c.body })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Sets (or clears) the owners of some of the tenant's cases; the ids of the cases changed. */
export async function setAssignee(
  db: Executor,
  tenantId: string,
  caseIds: readonly string[],
  assigneeId: string | null,
): Promise<void> {
  if (caseIds.length === 0) return;
  await db
    .updateTable("cases")
    .set({ assignee_id: assigneeId, assigned_at: assigneeId ? new Date() : null, updated_at: new Date() })
    .where("tenant_id", "=", tenantId)
    .where("id", "in", caseIds)
    .execute();
}

/** The review deadline of each case type the tenant set, in hours. */
export async function reviewSlas(db: Executor, tenantId: string): Promise<Map<string, number>> {
  const rows = await findRows(db, "review_slas", { tenant_id: tenantId });
  return new Map(rows.map((r) => [r.case_type, r.hours]));
}

/** Sets a type's review deadline, or removes it (`hours` null). */
export async function putReviewSla(
  db: Executor,
  tenantId: string,
  caseType: string,
  hours: number | null,
): Promise<void> {
  if (hours === null) {
    await deleteRows(db, "review_slas", { tenant_id: tenantId, case_type: caseType });
    return;
  }
  await db
    .insertInto("review_slas")
    .values({ tenant_id: tenantId, case_type: caseType, hours })
    .onConflict((oc) => oc.columns(["tenant_id", "case_type"]).doUpdateSet({ hours, updated_at: new Date() }))
    .execute();
}

/** The tenant's saved filters, by name. */
export function caseFilters(db: Executor, tenantId: string): Promise<CaseFilterRow[]> {
  return db
    .selectFrom("case_filters")
    .selectAll()
    .where("tenant_id", "=", tenantId)
    .orderBy("name")
    .execute();
}

export function insertCaseFilter(
  db: Executor,
  f: { id: string; tenantId: string; name: string; query: string; createdBy: string },
): Promise<CaseFilterRow | undefined> {
  return db
    .insertInto("case_filters")
    .values({ id: f.id, tenant_id: f.tenantId, name: f.name, query: f.query, created_by: f.createdBy })
    .onConflict((oc) => oc.columns(["tenant_id", "name"]).doNothing())
    .returningAll()
    .executeTakeFirst();
}

export async function deleteCaseFilter(db: Executor, tenantId: string, id: string): Promise<CaseFilterRow[]> {
  return db
    .deleteFrom("case_filters")
    .where("tenant_id", "=", tenantId)
    .where("id", "=", id)
    .returningAll()
    .execute();
}
