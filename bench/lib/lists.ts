import { sql } from "kysely";
import type { Db } from "../../src/platform/db/index.js";

/** The i-th value `seedList` stores (0-based): IBAN-shaped, `DE` and 20 digits, already normalised. */
export function seededValue(i: number): string {
  return `DE${String(i).padStart(20, "0")}`;
}

/**
 * Seeds the tenant's list `listId` with `n` values (`seededValue(0)` to `seededValue(n - 1)`)
 * through the lists module's own tables, in three statements: the list's row (made with rule
 * `iban` when the tenant has no such list), the values in key order, and the list's count. A
 * million values take seconds on PostgreSQL, where the API would take 100 calls.
 */
export async function seedList(db: Db, tenantId: string, listId: string, n: number): Promise<void> {
  const { rows } = await sql<{ list_key: number }>`
    INSERT INTO lists (tenant_id, list_id, description, normalize)
    VALUES (${tenantId}::uuid, ${listId}, 'seeded by the bench', 'iban')
    ON CONFLICT (tenant_id, list_id) DO UPDATE SET updated_at = now()
    RETURNING list_key`.execute(db.root);
  const listKey = rows[0]?.list_key as number;
  await sql`
    INSERT INTO list_values (list_key, value)
    SELECT ${listKey}::int8, 'DE' || lpad(g::text, 20, '0') FROM generate_series(0, ${n - 1}::int) AS g
    ON CONFLICT DO NOTHING`.execute(db.root);
  await sql`
    UPDATE lists SET value_count = (SELECT count(*) FROM list_values WHERE list_key = ${listKey}::int8)
    WHERE list_key = ${listKey}::int8`.execute(db.root);
  // Sets the visibility map as autovacuum would, so that a probe is an index-only scan.
  await sql`VACUUM ANALYZE list_values`.execute(db.root);
}
