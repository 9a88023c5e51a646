import { sql } from "kysely";
import { type Executor, findRow, findRows, type Row } from "../../platform/db/index.js";

export type ListRow = Row<"lists">;

export function findList(db: Executor, tenantId: string, listId: string): Promise<ListRow | undefined> {
  return findRow(db, "lists", { tenant_id: tenantId, list_id: listId });
}

export function findLists(db: Executor, tenantId: string): Promise<ListRow[]> {
  return findRows(db, "lists", { tenant_id: tenantId }, ["list_id"]);
}

/** Of these list ids, those the tenant has. */
export async function existingListIds(db: Executor, tenantId: string, listIds: readonly string[]) {
  if (listIds.length === 0) return new Set<string>();
  const rows = await db
    .selectFrom("lists")
    .select("list_id")
    .where("tenant_id", "=", tenantId)
    .where("list_id", "in", [...listIds])
    .execute();
  return new Set(rows.map((r) => r.list_id));
}

/** Creates the list, or sets the fields given on the one the tenant has; the row before and after. */
export async function upsertList(
  db: Executor,
  tenantId: string,
  listId: string,
  fields: { description?: string; normalize?: string },
): Promise<ListRow> {
  return db
    .insertInto("lists")
    .values({ tenant_id: tenantId, list_id: listId, ...fields })
    .onConflict((oc) =>
      oc.columns(["tenant_id", "list_id"]).doUpdateSet({ ...fields, updated_at: sql`now()` }),
    )
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * Removes then adds values of a list in one statement, and keeps its count on its row: the row is
 * locked only by the closing UPDATE, until the caller's transaction ends. Lookups read without
 * locks, so they never wait for it. The list's count after the change.
 */
export async function changeValues(
  db: Executor,
  listKey: number,
  add: readonly string[],
  remove: readonly string[],
): Promise<{ valueCount: number; added: number; removed: number }> {
  const { rows } = await sql<{ value_count: number; added: number; removed: number }>`
    WITH removed AS (
      DELETE FROM list_values WHERE list_key = ${listKey} AND value = ANY(${[...remove]}::text[])
      RETURNING 1
    ),
    added AS (
      INSERT INTO list_values (list_key, value)
      SELECT ${listKey}, v FROM unnest(${[...add]}::text[]) AS v
      ON CONFLICT DO NOTHING
      RETURNING 1
    ),
    counts AS (SELECT (SELECT count(*) FROM added)::int AS added, (SELECT count(*) FROM removed)::int AS removed)
    UPDATE lists SET value_count = value_count + counts.added - counts.removed, updated_at = now()
    FROM counts WHERE list_key = ${listKey}
    RETURNING value_count, counts.added, counts.removed`.execute(db);
  const row = rows[0];
  if (!row) throw new Error(`list ${listKey} vanished while its values changed`);
  return { valueCount: row.value_count, added: row.added, removed: row.removed };
}

/** A page of a list's values in byte order, from `after` (exclusive), within `[from, to)` when given. */
export async function valuesPage(
  db: Executor,
  listKey: number,
  options: { from?: string; to?: string; after?: string; limit: number },
): Promise<string[]> {
  let query = db.selectFrom("list_values").select("value").where("list_key", "=", listKey);
  if (options.from !== undefined) query = query.where("value", ">=", options.from);
  if (options.to !== undefined) query = query.where("value", "<", options.to);
  if (options.after !== undefined) query = query.where("value", ">", options.after);
  const rows = await query.orderBy("value").limit(options.limit).execute();
  return rows.map((r) => r.value);
}

/** Deletes the list and its values; the list's row, or undefined when the tenant has no such list. */
export async function deleteList(db: Executor, tenantId: string, listId: string) {
  const row = await db
    .deleteFrom("lists")
    .where("tenant_id", "=", tenantId)
    .where("list_id", "=", listId)
    .returningAll()
    .executeTakeFirst();
  if (row) await db.deleteFrom("list_values").where("list_key", "=", row.list_key).execute();
  return row;
}

/** One `inList` probe of a tenant's list, with the value as each normalisation rule makes it (rules giving one value share a row). */
export interface NormalizedProbe {
  tenantId: string;
  list: string;
  variants: ReadonlyArray<{ value: string; rules: readonly string[] }>;
}

/**
 * Whether each probe's value is in its tenant's list, in one statement: each probe's list row (by
 * its unique key) gives the list's rule, which picks the value to look for, and that value is one
 * probe of the values' primary key. Undefined for a list the tenant does not have.
 */
export async function containsValues(
  db: Executor,
  probes: readonly NormalizedProbe[],
): Promise<Array<boolean | undefined>> {
  if (probes.length === 0) return [];
  const rows = probes.flatMap((p, i) =>
    p.variants.map((v) => ({ i, tenantId: p.tenantId, list: p.list, value: v.value, rules: v.rules })),
  );
  const { rows: found } = await sql<{ i: number; known: boolean; found: boolean }>`
    SELECT q.i, bool_or(l.list_key IS NOT NULL) AS known,
           bool_or(l.normalize = ANY(string_to_array(q.rules, ' '))
                   AND EXISTS (SELECT 1 FROM list_values v WHERE v.list_key = l.list_key AND v.value = q.value)) AS found
    FROM unnest(${rows.map((r) => r.i)}::int[], ${rows.map((r) => r.tenantId)}::uuid[],
                ${rows.map((r) => r.list)}::text[], ${rows.map((r) => r.value)}::text[],
                ${rows.map((r) => r.rules.join(" "))}::text[])
         AS q(i, tenant_id, list, value, rules)
    LEFT JOIN lists l ON l.tenant_id = q.tenant_id AND l.list_id = q.list
    GROUP BY q.i`.execute(db);
  const answers: Array<boolean | undefined> = probes.map(() => undefined);
  for (const row of found) if (row.known) answers[row.i] = row.found === true;
  return answers;
}
