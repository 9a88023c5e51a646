import { type Kysely, type RawBuilder, type Selectable, sql, type Updateable } from "kysely";
import type { Database } from "./schema.js";

// The shapes every repository repeats: one row by the values of some columns, all rows by them,
// an update or a delete by them. Each is one statement; a repository names its table and its
// key, and keeps its own queries for anything more (joins, ordering, locks across rows).

/** A query executor: the root database or an open transaction (as `Executor` in index.ts). */
type Executor = Kysely<Database>;

/** A table's name. */
export type Table = keyof Database & string;
/** A row of a table, as a query reads it. */
export type Row<T extends Table> = Selectable<Database[T]>;
/** Values for some of a table's columns, matched with `=` (a null with `IS NULL`). */
export type Match<T extends Table> = Partial<Row<T>>;
/** As `Match`, where a column may also be given a list of values, matched with `IN`. */
export type Filter<T extends Table> = {
  [C in keyof Row<T>]?: Row<T>[C] | ReadonlyArray<Row<T>[C]>;
};

function where(query: AnyQuery, match: object): AnyQuery {
  let q = query;
  for (const [column, value] of Object.entries(match)) {
    // A column named by the caller's own code (typed as the table's), never by input.
    if (value === undefined) throw new Error(`no value to match ${column} with`);
    q = q.where(sql.ref(column), value === null ? "is" : Array.isArray(value) ? "in" : "=", value);
  }
  return q;
}

/** The row whose columns equal `match`, or undefined; `forUpdate` locks it for the transaction. */
export function findRow<T extends Table>(
  db: Executor,
  table: T,
  match: Match<T>,
  options: { forUpdate?: boolean } = {},
): Promise<Row<T> | undefined> {
  let query = where(db.selectFrom(table as never).selectAll() as never as AnyQuery, match);
  if (options.forUpdate) query = query.forUpdate();
  return query.executeTakeFirst() as Promise<Row<T> | undefined>;
}

/** A column to order by, ascending, or descending with ` desc`. */
export type OrderBy<T extends Table> = (keyof Database[T] & string) | `${keyof Database[T] & string} desc`;

/**
 * Every row whose columns equal `match` (or are among a list given for one; an empty list matches
 * no row, without a query), in the order of the columns named by `orderBy`.
 */
export async function findRows<T extends Table>(
  db: Executor,
  table: T,
  match: Filter<T>,
  orderBy: ReadonlyArray<OrderBy<T>> = [],
): Promise<Row<T>[]> {
  if (Object.values(match).some((v) => Array.isArray(v) && v.length === 0)) return [];
  let query = where(db.selectFrom(table as never).selectAll() as never as AnyQuery, match);
  for (const order of orderBy) {
    const [column, direction] = order.split(" ");
    query = query.orderBy(sql.ref(column as string), direction === "desc" ? "desc" : "asc");
  }
  return query.execute() as Promise<Row<T>[]>;
}

/** Sets `values` on the rows whose columns equal `match`; the number of rows changed. */
export async function updateRows<T extends Table>(
  db: Executor,
  table: T,
  match: Match<T>,
  values: { [C in keyof Updateable<Database[T]>]?: Updateable<Database[T]>[C] | RawBuilder<unknown> },
): Promise<number> {
  const query = where(db.updateTable(table as never).set(values as never) as never as AnyQuery, match);
  const result = await query.executeTakeFirst();
  return Number((result as { numUpdatedRows?: bigint }).numUpdatedRows ?? 0n);
}

/**
 * Inserts the row of `key` with `columns`, or, when a row of that key exists, sets `columns` and
 * `updated_at` on it; the row as it is after. The key's columns must carry a unique constraint.
 */
export function upsertRow<T extends Table>(
  db: Executor,
  table: T,
  key: Match<T>,
  columns: Updateable<Database[T]>,
  options: { insertOnly?: Updateable<Database[T]> } = {},
): Promise<Row<T>> {
  return (
    db
      .insertInto(table as never)
      .values({ ...key, ...options.insertOnly, ...columns } as never)
      // biome-ignore lint/suspicious/noExplicitAny: the conflict builder of a table named at run time
      .onConflict((oc: any) =>
        oc.columns(Object.keys(key)).doUpdateSet({ ...columns, updated_at: sql<Date>`now()` }),
      )
      .returningAll()
      .executeTakeFirstOrThrow() as Promise<Row<T>>
  );
}

/** Deletes the rows whose columns equal `match`; the number of rows deleted. */
export async function deleteRows<T extends Table>(db: Executor, table: T, match: Match<T>): Promise<number> {
  const query = where(db.deleteFrom(table as never) as never as AnyQuery, match);
  const result = await query.executeTakeFirst();
  return Number((result as { numDeletedRows?: bigint }).numDeletedRows ?? 0n);
}

/** What the helpers above use of a Kysely builder, whatever its table. */
interface AnyQuery {
  where(column: unknown, op: string, value: unknown): AnyQuery;
  forUpdate(): AnyQuery;
  orderBy(column: unknown, direction: "asc" | "desc"): AnyQuery;
  execute(): Promise<unknown>;
  executeTakeFirst(): Promise<unknown>;
}
