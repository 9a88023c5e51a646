import { type ExpressionBuilder, type SelectQueryBuilder, sql } from "kysely";
import { type Database, type Executor, keysetPage } from "../../platform/db/index.js";

// The "All cases" view's read of the cases table: every status and decision, filtered, newest
// first (or by due date), after a keyset position. Filters on what other modules keep of a case
// (its tags, its entities) come in as subqueries of case ids written by their owners.

/** The name-search expression, exactly as the index `cases_display_name_words` is built. */
const NAME_WORDS = sql`to_tsvector('simple', coalesce(subject ->> 'displayName', ''))`;

/** A transaction's amount when it is a number, else null (never a cast error). */
const AMOUNT = sql<string | null>`CASE WHEN json_typeof(subject -> 'transaction' -> 'amount') = 'number'
  THEN (subject -> 'transaction' ->> 'amount')::numeric END`;

type CaseIds = SelectQueryBuilder<Database, keyof Database, { case_id: string }>;

export interface CaseFilters {
  status?: string;
  type?: string;
  workflowId?: string;
  decision?: string;
  /** A user's id, or `none` for the cases nobody owns. */
  assignee?: string;
  createdFrom?: Date;
  createdTo?: Date;
  amountMin?: number;
  amountMax?: number;
  /** Only the cases among each of these id sets (another module's: a tag, an identifier). */
  among?: CaseIds[];
  /** The search: one of these alone per query (the service runs one query per kind and merges). */
  caseId?: string;
  /** Words of the display name, the last one matched as a prefix: `grace hop`. */
  nameWords?: string[];
  customerId?: string;
}

/** A case as every list of cases shows it (the review queue's rows). */
export interface ListedCase {
  id: string;
  status: string;
  type: string;
  workflow_id: string;
  workflow_version: number;
  display_name: string | null;
  external_customer_id: string | null;
  decision_value: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface CaseListRow extends ListedCase {
  assignee_id: string | null;
  amount: string | null;
}

export interface CaseKeyset {
  createdAt: Date;
  id: string;
}

/**
 * A tsquery of whole words and the last one as a prefix (`grace & hop:*`, as one types); the
 * words hold only letters and digits. Whole words let the index skip through a common word's
 * long list with a rare one's short list; a prefix is read whole, so only the last is one.
 */
function wordsQuery(words: readonly string[]): string {
  return words.map((w, i) => (i === words.length - 1 ? `${w}:*` : w)).join(" & ");
}

/**
 * The tenant's cases as a list shows them (dry runs left out): the columns the review queue reads,
 * to which the "All cases" view adds its own.
 */
export function listedCases(db: Executor, tenantId: string) {
  return db
    .selectFrom("cases")
    .select([
      "id",
      "status",
      "type",
      "workflow_id",
      "workflow_version",
      "external_customer_id",
      "created_at",
      "updated_at",
      sql<string | null>`subject ->> 'displayName'`.as("display_name"),
      sql<string | null>`decision ->> 'value'`.as("decision_value"),
    ])
    .where("tenant_id", "=", tenantId)
    .where("dry_run", "=", false);
}

/** `query` with the filters `f`; `byWords` when the word index is to serve a name search. */
export function filterCases<O>(
  query: SelectQueryBuilder<Database, "cases", O>,
  f: CaseFilters,
  byWords = false,
): SelectQueryBuilder<Database, "cases", O> {
  let q = query;
  if (f.status) q = q.where("status", "=", f.status);
  if (f.type) q = q.where("type", "=", f.type);
  if (f.workflowId) q = q.where("workflow_id", "=", f.workflowId);
  if (f.decision) q = q.where(sql<string>`decision ->> 'value'`, "=", f.decision);
  if (f.assignee === "none") q = q.where("assignee_id", "is", null);
  else if (f.assignee) q = q.where("assignee_id", "=", f.assignee);
  if (f.createdFrom) q = q.where("created_at", ">=", f.createdFrom);
  if (f.createdTo) q = q.where("created_at", "<", f.createdTo);
  // Only transactions have an amount; the type lets the index `cases_tenant_amount` serve it.
  if (f.amountMin !== undefined || f.amountMax !== undefined) q = q.where("type", "=", "Transaction");
  if (f.amountMin !== undefined) q = q.where(AMOUNT, ">=", String(f.amountMin));
  if (f.amountMax !== undefined) q = q.where(AMOUNT, "<=", String(f.amountMax));
  for (const ids of f.among ?? []) q = q.where("id", "in", ids);
  if (f.caseId) q = q.where("id", "=", f.caseId);
  if (f.nameWords && f.nameWords.length > 0) {
    const match = sql<boolean>`${NAME_WORDS} @@ to_tsquery('simple', ${wordsQuery(f.nameWords)})`;
    // Within the window of the newest cases, `IS TRUE` (which no index answers) keeps the
    // planner on the newest-first index: the word index would read every match of a common word.
    q = q.where(byWords ? match : sql<boolean>`(${match}) IS TRUE`);
  }
  if (f.customerId) q = q.where("external_customer_id", "=", f.customerId);
  return q;
}

const after = (k: CaseKeyset) => (eb: ExpressionBuilder<Database, "cases">) =>
  eb.or([
    eb("created_at", "<", k.createdAt),
    eb.and([eb("created_at", "=", k.createdAt), eb("id", "<", k.id)]),
  ]);

/**
 * How many cases a page filtered by another module's ids (a tag) reads at most along its order: a
 * tag that few of the filtered cases carry, or none, would otherwise have it read them all (no
 * index serves the intersection of two large sets).
 */
export const SCAN_LIMIT = 2000;

/** A page read within SCAN_LIMIT cases; `scannedTo` when it is short: the last case read, where the next page goes on. */
export interface ScannedPage<R> {
  rows: R[];
  scannedTo?: CaseKeyset;
}

/** The plain bound on the time that lets an index range serve a keyset condition (an OR, which none does). */
const fromPosition = <Q extends SelectQueryBuilder<Database, "cases", unknown>>(
  q: Q,
  direction: "asc" | "desc",
  position: CaseKeyset | undefined,
): Q => (position ? q.where("created_at", direction === "asc" ? ">=" : "<=", position.createdAt) : q) as Q;

/**
 * The SCAN_LIMIT-th case of the filters `f` without their subqueries, along `direction` after
 * `position`: where a page filtered by a subquery stops reading. Undefined when fewer remain.
 */
export async function scanEdge(
  db: Executor,
  tenantId: string,
  f: CaseFilters,
  direction: "asc" | "desc",
  position: CaseKeyset | undefined,
): Promise<CaseKeyset | undefined> {
  const query = fromPosition(
    filterCases(
      db
        .selectFrom("cases")
        .select(["created_at", "id"])
        .where("tenant_id", "=", tenantId)
        .where("dry_run", "=", false),
      {
        ...f,
        among: undefined,
      },
    ),
    direction,
    position,
  );
  const at = position && ([position.createdAt, position.id] as const);
  const edge = await keysetPage(query, ["created_at", "id"], direction, at, 1)
    .offset(SCAN_LIMIT - 1)
    .executeTakeFirst();
  return edge && { createdAt: edge.created_at, id: edge.id };
}

/** Only the cases up to `edge` (included) along `direction`, with the plain bound an index range serves. */
export const upTo =
  (edge: CaseKeyset, direction: "asc" | "desc") =>
  <Q extends SelectQueryBuilder<Database, "cases", unknown>>(q: Q): Q => {
    const before = direction === "asc" ? "<" : ">";
    const upToId = direction === "asc" ? "<=" : ">=";
    return q
      .where("created_at", direction === "asc" ? "<=" : ">=", edge.createdAt)
      .where((eb) =>
        eb.or([
          eb("created_at", before, edge.createdAt),
          eb.and([eb("created_at", "=", edge.createdAt), eb("id", upToId, edge.id)]),
        ]),
      ) as Q;
  };

/**
 * One page of the tenant's cases filtered by a subquery (a tag), newest first, reading at most
 * SCAN_LIMIT cases of the other filters (see `ScannedPage`).
 */
export async function listCasesScanned(
  db: Executor,
  tenantId: string,
  f: CaseFilters,
  limit: number,
  position: CaseKeyset | undefined,
): Promise<ScannedPage<CaseListRow>> {
  const edge = await scanEdge(db, tenantId, f, "desc", position);
  const rows = await pageOf(db, tenantId, f, limit, position, { notOlderThan: edge });
  return rows.length < limit && edge ? { rows, scannedTo: edge } : { rows };
}

/** How many of the newest cases a name search reads along the newest-first index before the word index. */
const NAME_WINDOW = 2000;

/**
 * One page of the tenant's cases, newest first, after the keyset position. With no filter the
 * index `cases_tenant_created` serves it; a status, an assignee, a customer id or name words have
 * an index of their own; the other filters are read along the newest-first index.
 *
 * The planner cannot tell a rare word prefix from a common one (it guesses 2% for any prefix), so
 * a name search is not left to it: the newest NAME_WINDOW cases are read first (a common word has
 * its page there, and a full page found there is exactly the page); only a page not filled there
 * reads the word index, ordered so that the newest-first index cannot serve it.
 */
export async function listCases(
  db: Executor,
  tenantId: string,
  f: CaseFilters,
  limit: number,
  position: CaseKeyset | undefined,
): Promise<CaseListRow[]> {
  if (!f.nameWords || f.nameWords.length === 0) return pageOf(db, tenantId, f, limit, position, {});
  let edge = db
    .selectFrom("cases")
    .select(["created_at", "id"])
    .where("tenant_id", "=", tenantId)
    .where("dry_run", "=", false);
  if (position) edge = edge.where(after(position));
  const oldest = await edge
    .orderBy("created_at", "desc")
    .orderBy("id", "desc")
    .offset(NAME_WINDOW - 1)
    .limit(1)
    .executeTakeFirst();
  const window = oldest ? { createdAt: oldest.created_at, id: oldest.id } : undefined;
  const recent = await pageOf(db, tenantId, f, limit, position, { notOlderThan: window });
  if (recent.length >= limit || !window) return recent;
  return [...recent, ...(await pageOf(db, tenantId, f, limit - recent.length, window, { byWords: true }))];
}

function pageOf(
  db: Executor,
  tenantId: string,
  f: CaseFilters,
  limit: number,
  position: CaseKeyset | undefined,
  how: { notOlderThan?: CaseKeyset; byWords?: boolean },
): Promise<CaseListRow[]> {
  let query = filterCases(
    listedCases(db, tenantId).select(["assignee_id", AMOUNT.as("amount")]),
    f,
    how.byWords === true,
  );
  if (position) query = fromPosition(query.where(after(position)), "desc", position);
  if (how.notOlderThan) query = upTo(how.notOlderThan, "desc")(query);
  // `+ interval '0'` keeps the newest-first index from serving the order: the word index does.
  const ordered = how.byWords
    ? query.orderBy(sql`created_at + interval '0 seconds'`, "desc")
    : query.orderBy("created_at", "desc");
  return ordered.orderBy("id", "desc").limit(limit).execute();
}

/** The statuses a review deadline applies to: the case still waits for an analyst or an outside answer. */
export const AWAITING_STATUSES = ["in_review", "waiting"] as const;

/**
 * A position in a list by due date: among the cases with a deadline (`due`, at their due time),
 * or among those without one that follow them (`undue`, at their creation).
 */
export interface DueKeyset {
  kind: "due" | "undue";
  at: Date;
  id: string;
}

/** A case of a list by due date, with its due time (null without a deadline). */
export interface DueListRow extends CaseListRow {
  due_at: Date | null;
}

const byDue = (a: DueListRow, b: DueListRow) =>
  (a.due_at?.getTime() ?? 0) - (b.due_at?.getTime() ?? 0) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * One page of the tenant's cases by due date, the most overdue first: the cases awaiting review
 * or an answer whose type has a deadline (`hoursByType`), due at their creation plus its hours,
 * then the others, oldest first. A due time is not stored (decision 0026), but within one type
 * and status it runs with the creation, so each (type, status) is a keyset page along the index
 * `cases_tenant_status`, read from the position shifted by the type's hours, and the pages are
 * merged: the first page of the union is among the first pages of its parts.
 */
export async function listCasesByDue(
  db: Executor,
  tenantId: string,
  f: CaseFilters,
  hoursByType: ReadonlyMap<string, number>,
  limit: number,
  position: DueKeyset | undefined,
): Promise<DueListRow[]> {
  const rows = (at: readonly [Date, string] | undefined, n: number, filters: CaseFilters) =>
    keysetPage(
      filterCases(listedCases(db, tenantId).select(["assignee_id", AMOUNT.as("amount")]), filters),
      ["created_at", "id"],
      "asc",
      at,
      n,
    );
  const statuses = AWAITING_STATUSES.filter((s) => !f.status || f.status === s);
  const types = [...hoursByType].filter(([type]) => !f.type || f.type === type);
  let page: DueListRow[] = [];
  if (position?.kind !== "undue") {
    const parts = await Promise.all(
      types.flatMap(([type, hours]) =>
        statuses.map(async (status) => {
          const shift = hours * 3_600_000;
          const at = position && ([new Date(position.at.getTime() - shift), position.id] as const);
          const found = await rows(at, limit, { ...f, type, status }).execute();
          return found.map((r) => ({ ...r, due_at: new Date(r.created_at.getTime() + shift) }));
        }),
      ),
    );
    page = parts.flat().sort(byDue).slice(0, limit);
  }
  if (page.length >= limit) return page;
  const deadlined = types.map(([type]) => type);
  const rest = rows(
    position?.kind === "undue" ? [position.at, position.id] : undefined,
    limit - page.length,
    f,
  )
    // The cases without a deadline: another status, or a type that has none.
    .where((eb) =>
      deadlined.length === 0
        ? eb.lit(true)
        : eb.not(eb.and([eb("status", "in", [...AWAITING_STATUSES]), eb("type", "in", deadlined)])),
    );
  return [...page, ...(await rest.execute()).map((r) => ({ ...r, due_at: null }))];
}
