import { isUuid } from "../../platform/crypto.js";
import { badRequest } from "../../platform/errors.js";
import { AWAITING_STATUSES, type DueKeyset } from "../cases/index.js";

// How the lists of cases (the review queue, All cases, Mine) are ordered and paged: by creation,
// their default, or by due date, the most overdue first (decision 0026).

/** `due`: by due date, the most overdue first; empty: the list's own order (by creation). */
export type ListSort = "" | "due";

/** The sort a list was asked for; 400 for another. */
export function sortOf(value: string | undefined): ListSort {
  if (!value) return "";
  if (value === "due") return value;
  throw badRequest(`unknown sort "${value.slice(0, 100)}"`);
}

/** Where the next page starts: after a row, by creation or by due date. */
export type ListPosition = { kind: "created"; at: Date; id: string } | DueKeyset;

/** The page link's position after a row (by due date: its due time, or its creation when it has none). */
export function encodeCursor(
  row: { created_at: Date; id: string; due_at?: Date | null },
  sort: ListSort,
): string {
  const kind = sort === "" ? "created" : row.due_at ? "due" : "undue";
  const at = kind === "due" ? (row.due_at as Date) : row.created_at;
  return Buffer.from(`${kind}|${at.toISOString()}|${row.id}`).toString("base64url");
}

/**
 * The next page's link of a list read `pageSize + 1` rows at a time: after the page's last row
 * when there is more, else from where a bounded read stopped (`scannedTo`), else none.
 */
export function nextCursor(
  rows: ReadonlyArray<{ created_at: Date; id: string; due_at?: Date | null }>,
  pageSize: number,
  sort: ListSort,
  scannedTo: { createdAt: Date; id: string } | undefined,
): string | null {
  const last = rows[pageSize - 1];
  if (rows.length > pageSize && last) return encodeCursor(last, sort);
  return scannedTo ? encodeCursor({ created_at: scannedTo.createdAt, id: scannedTo.id }, sort) : null;
}

/** A page link's position, which must be of the list's sort; 400 for one the console did not make. */
export function decodeCursor(cursor: string, sort: ListSort): ListPosition {
  const [kind, at, id] = Buffer.from(cursor, "base64url").toString("utf8").split("|");
  const time = at ? new Date(at) : undefined;
  const kinds = sort === "" ? ["created"] : ["due", "undue"];
  if (!kind || !kinds.includes(kind) || !time || Number.isNaN(time.getTime()) || !id || !isUuid(id)) {
    throw badRequest("this page link is not one the console made");
  }
  return { kind: kind as ListPosition["kind"], at: time, id };
}

/** A row with when its review is due (creation plus its type's hours, while it awaits one). */
export function withDue<R extends { created_at: Date; type: string; status: string }>(
  row: R,
  hoursByType: ReadonlyMap<string, number>,
  now: number,
): R & { dueAt: Date | null; overdue: boolean } {
  const hours = hoursByType.get(row.type);
  const awaiting = (AWAITING_STATUSES as readonly string[]).includes(row.status);
  const dueAt =
    hours !== undefined && awaiting ? new Date(row.created_at.getTime() + hours * 3_600_000) : null;
  return { ...row, dueAt, overdue: dueAt !== null && dueAt.getTime() < now };
}
