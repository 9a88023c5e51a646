import type { AppContext } from "../../platform/context.js";
import { isUuid } from "../../platform/crypto.js";
import { badRequest } from "../../platform/errors.js";
import { CASE_STATUSES, CASE_TYPES, DECISION_VALUES } from "../case-model/index.js";
import {
  type CaseFilters,
  type CaseListRow,
  type DueListRow,
  getCaseFilters,
  getReviewSlas,
  listCases,
  listCasesByDue,
  listCasesScanned,
} from "../cases/index.js";
import { casesTagged, getTagOptions } from "../tags/index.js";
import { getUsers } from "../users/index.js";
import { getWorkflows } from "../workflows/index.js";
import { utcDay as day } from "./form.js";
import { decodeCursor, nextCursor, sortOf, withDue } from "./list-order.js";

export const ALL_PAGE_SIZE = 50;

/** The query string of the "All cases" view, as the browser sends it. */
export interface AllCasesQuery {
  q?: string;
  status?: string;
  type?: string;
  workflowId?: string;
  decision?: string;
  tag?: string;
  assignee?: string;
  from?: string;
  to?: string;
  amountMin?: string;
  amountMax?: string;
  /** `due`: by due date, the most overdue first; else newest first. */
  sort?: string;
  cursor?: string;
}

/** The filters as the page shows them back (every one a string, empty when unset). */
export type AllCasesForm = Required<Omit<AllCasesQuery, "cursor">>;

export interface AllCasesRow extends CaseListRow {
  /** When review is due (creation plus the type's deadline), for cases still awaiting one. */
  dueAt: Date | null;
  overdue: boolean;
}

export interface AllCasesPage {
  form: AllCasesForm;
  rows: AllCasesRow[];
  nextCursor: string | null;
  paged: boolean;
  /** The page stopped after reading its share of cases (a tag few carry): the next page reads on. */
  scanned: boolean;
  workflows: string[];
  tags: string[];
  users: Array<{ userId: string; name: string }>;
  saved: Array<{ filterId: string; name: string; query: string; createdBy: string }>;
  /** The view's query string without the page position: what "Save this filter" saves. */
  query: string;
}

function oneOf(value: string | undefined, allowed: readonly string[], what: string): string | undefined {
  if (!value) return undefined;
  if (!allowed.includes(value)) throw badRequest(`unknown ${what} "${value.slice(0, 100)}"`);
  return value;
}

function amount(value: string | undefined, what: string): number | undefined {
  if (!value) return undefined;
  if (!/^\d{1,15}(\.\d{1,6})?$/.test(value)) throw badRequest(`${what} is not an amount`);
  return Number(value);
}

/** The words of a search, each kept to letters and digits (what a name's words are made of). */
export function searchWords(q: string): string[] {
  return q
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean)
    .slice(0, 8)
    .map((w) => w.slice(0, 64));
}

const newestFirst = (a: CaseListRow, b: CaseListRow) =>
  b.created_at.getTime() - a.created_at.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

/** By due date (those without one last, oldest first), as `listCasesByDue` orders each part. */
const dueFirst = (a: Partial<DueListRow> & CaseListRow, b: Partial<DueListRow> & CaseListRow) => {
  if (a.due_at && b.due_at) return a.due_at.getTime() - b.due_at.getTime() || (a.id < b.id ? -1 : 1);
  if (a.due_at || b.due_at) return a.due_at ? -1 : 1;
  return a.created_at.getTime() - b.created_at.getTime() || (a.id < b.id ? -1 : 1);
};

/**
 * Every case of the tenant, filtered and searched, newest first. A search runs one query per
 * kind of match (case id, name words, customer id, and what features find: any identifier of an
 * entity, through the console seam), each
 * with the filters and the page position and each served by an index of its own, and merges
 * them: the first page of the union is among the first pages of its parts.
 */
export async function allCases(
  ctx: AppContext,
  tenantId: string,
  userId: string,
  query: AllCasesQuery,
): Promise<AllCasesPage> {
  const q = (query.q ?? "").trim().slice(0, 200);
  const assignee = query.assignee === "me" ? userId : query.assignee || undefined;
  if (assignee && assignee !== "none" && !isUuid(assignee)) throw badRequest("unknown assignee");
  const tag = query.tag?.slice(0, 64) || undefined;
  const filters: CaseFilters = {
    status: oneOf(query.status, CASE_STATUSES, "status"),
    type: oneOf(query.type, CASE_TYPES, "case type"),
    workflowId: query.workflowId?.slice(0, 200) || undefined,
    decision: oneOf(query.decision, DECISION_VALUES, "decision"),
    assignee,
    createdFrom: day(query.from, "the first day"),
    createdTo: day(query.to, "the last day", true),
    amountMin: amount(query.amountMin, "the lowest amount"),
    amountMax: amount(query.amountMax, "the highest amount"),
    among: tag ? [casesTagged(ctx.db.root, tenantId, tag)] : [],
  };
  const sort = sortOf(query.sort);
  const position = query.cursor ? decodeCursor(query.cursor, sort) : undefined;
  const limit = ALL_PAGE_SIZE + 1;
  const slas = await getReviewSlas(ctx, tenantId);
  const list = (f: CaseFilters): Promise<CaseListRow[]> => {
    if (position?.kind === "created" || sort === "")
      return listCases(
        ctx.db.root,
        tenantId,
        f,
        limit,
        position && { createdAt: position.at, id: position.id },
      );
    return listCasesByDue(ctx.db.root, tenantId, f, slas, limit, position);
  };

  let found: Promise<CaseListRow[]>;
  let scannedTo: { createdAt: Date; id: string } | undefined;
  if (q === "" && tag && (position?.kind === "created" || sort === "")) {
    // A tag few of the filtered cases carry: the page reads a bounded share of them (SCAN_LIMIT).
    found = listCasesScanned(
      ctx.db.root,
      tenantId,
      filters,
      limit,
      position && { createdAt: position.at, id: position.id },
    ).then((scanned) => {
      scannedTo = scanned.scannedTo;
      return scanned.rows;
    });
  } else if (q === "") {
    found = list(filters);
  } else {
    // A case id is not a name: its pieces would only make the name search slower.
    const words = isUuid(q) ? [] : searchWords(q);
    const parts = [
      words.length > 0 ? list({ ...filters, nameWords: words }) : Promise.resolve([]),
      list({ ...filters, customerId: q }),
      // What features keep of cases (the entities' identifiers), each a query of its own.
      ...ctx.console.sections.flatMap((s) =>
        s.searchCases
          ? [list({ ...filters, among: [...(filters.among ?? []), s.searchCases(ctx, tenantId, q)] })]
          : [],
      ),
      isUuid(q) ? list({ ...filters, caseId: q.toLowerCase() }) : Promise.resolve([]),
    ];
    found = Promise.all(parts).then((lists) => {
      const byId = new Map(lists.flat().map((r) => [r.id, r]));
      return [...byId.values()].sort(sort === "due" ? dueFirst : newestFirst).slice(0, limit);
    });
  }
  const [rows, workflows, tags, users, saved] = await Promise.all([
    found,
    getWorkflows(ctx, tenantId),
    getTagOptions(ctx, tenantId),
    getUsers(ctx, tenantId),
    getCaseFilters(ctx, tenantId),
  ]);
  const page = rows.slice(0, ALL_PAGE_SIZE);
  const now = Date.now();
  const form: AllCasesForm = {
    q,
    status: filters.status ?? "",
    type: filters.type ?? "",
    workflowId: filters.workflowId ?? "",
    decision: filters.decision ?? "",
    tag: tag ?? "",
    assignee: query.assignee === "me" ? "me" : (assignee ?? ""),
    from: query.from ?? "",
    to: query.to ?? "",
    amountMin: query.amountMin ?? "",
    amountMax: query.amountMax ?? "",
    sort,
  };
  return {
    form,
    rows: page.map((row) => withDue(row, slas, now)),
    nextCursor: nextCursor(rows, ALL_PAGE_SIZE, sort, scannedTo),
    scanned: scannedTo !== undefined,
    paged: position !== undefined,
    workflows: workflows.map((w) => w.workflowId),
    tags: tags.map((t) => t.tag),
    users: users.map((u) => ({ userId: u.userId, name: u.name })),
    saved: saved.map((s) => ({ filterId: s.id, name: s.name, query: s.query, createdBy: s.created_by })),
    query: new URLSearchParams(Object.entries(form).filter(([, v]) => v !== "")).toString(),
  };
}
