import { type RawBuilder, sql } from "kysely";
import type { Executor } from "../../platform/db/index.js";

export interface ApiKeyRow {
  id: string;
  tenant_id: string;
  name: string;
  key_hint: string;
  scopes: string[];
  rate_limit_per_second: number | null;
  rate_limit_burst: number | null;
  created_at: Date;
  last_used_at: Date | null;
  expires_at: Date | null;
}

const COLUMNS = [
  "id",
  "tenant_id",
  "name",
  "key_hint",
  "scopes",
  "rate_limit_per_second",
  "rate_limit_burst",
  "created_at",
  "last_used_at",
  "expires_at",
] as const;

export interface NewApiKey {
  id: string;
  tenantId: string;
  name: string;
  hash: Buffer;
  hint: string;
  scopes: string[];
  rateLimit: { perSecond: number; burst: number } | null;
  expiresAt: Date | null;
}

export async function insertApiKey(db: Executor, key: NewApiKey): Promise<ApiKeyRow> {
  return db
    .insertInto("api_keys")
    .values({
      id: key.id,
      tenant_id: key.tenantId,
      name: key.name,
      key_hash: key.hash,
      key_hint: key.hint,
      scopes: key.scopes,
      rate_limit_per_second: key.rateLimit?.perSecond ?? null,
      rate_limit_burst: key.rateLimit?.burst ?? null,
      expires_at: key.expiresAt,
    })
    .returning(COLUMNS)
    .executeTakeFirstOrThrow();
}

export function listApiKeys(db: Executor, tenantId: string): Promise<ApiKeyRow[]> {
  return db
    .selectFrom("api_keys")
    .select(COLUMNS)
    .where("tenant_id", "=", tenantId)
    .where("deleted_at", "is", null)
    .orderBy("created_at")
    .orderBy("id")
    .execute();
}

/** Soft-deletes; the very next lookup by hash no longer finds the key. */
export async function deleteApiKey(db: Executor, tenantId: string, keyId: string): Promise<boolean> {
  const result = await db
    .updateTable("api_keys")
    .set({ deleted_at: sql<Date>`now()` })
    .where("tenant_id", "=", tenantId)
    .where("id", "=", keyId)
    .where("deleted_at", "is", null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/**
 * The live keys with these hashes, in the order asked (undefined where none). Not tenant-scoped:
 * the key is what names the tenant. One statement for the keys of many concurrent requests.
 */
export async function findLiveKeysByHash(
  db: Executor,
  hashes: Buffer[],
): Promise<Array<ApiKeyRow | undefined>> {
  const rows = await db
    .selectFrom("api_keys")
    .select([...COLUMNS, "key_hash"])
    .where("key_hash", "in", hashes)
    .where("deleted_at", "is", null)
    .execute();
  const byHash = new Map(rows.map(({ key_hash, ...row }) => [Buffer.from(key_hash).toString("hex"), row]));
  return hashes.map((h) => byHash.get(h.toString("hex")));
}

/** Records use at most once a minute per key, so authentication stays a read. */
export async function touchApiKey(db: Executor, tenantId: string, keyId: string): Promise<void> {
  await db
    .updateTable("api_keys")
    .set({ last_used_at: sql<Date>`now()` })
    .where("tenant_id", "=", tenantId)
    .where("id", "=", keyId)
    .where((eb) =>
      eb.or([
        eb("last_used_at", "is", null),
        eb("last_used_at", "<", sql<Date>`now() - interval '1 minute'`),
      ]),
    )
    .execute();
}

/**
 * Whether a key is live (not deleted, not expired), as a condition for another module's write:
 * a case's insert confirms the key its request was let in with (decision 0028).
 */
export function isLiveKey(
  keyId: ReturnType<typeof sql.ref>,
  tenantId: ReturnType<typeof sql.ref>,
): RawBuilder<boolean> {
  return sql<boolean>`EXISTS (
    SELECT 1 FROM api_keys k
    WHERE k.id = ${keyId} AND k.tenant_id = ${tenantId} AND k.deleted_at IS NULL
      AND (k.expires_at IS NULL OR k.expires_at > now()))`;
}
