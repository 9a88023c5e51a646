import { Batcher } from "../../platform/batcher.js";
import type { AppContext } from "../../platform/context.js";
import type { Db, InSameTransaction } from "../../platform/db/index.js";
import { AppError, badRequest, notFound } from "../../platform/errors.js";
import { oncePer } from "../../platform/once-per.js";
import { requireTenant } from "../tenants/index.js";
import { type AuditBy, audited } from "../users/index.js";
import { checkKeyValue, generateKeyValue, hashKeyValue, keyHint, newKeyId } from "./api-key-format.js";
import {
  type ApiKeyRow,
  deleteApiKey,
  findLiveKeysByHash,
  insertApiKey,
  listApiKeys,
  touchApiKey,
} from "./api-keys.repo.js";
import { isScope, type Scope } from "./scopes.js";

export interface RateLimit {
  perSecond: number;
  burst: number;
}

export const DEFAULT_RATE_LIMIT: RateLimit = { perSecond: 1000, burst: 2000 };

export interface CreateApiKeyInput {
  name: string;
  scopes: string[];
  expiresAt?: string | null;
  /** Absent: the default limit. `null`: unlimited. */
  rateLimit?: RateLimit | null;
}

export interface ApiKeyView {
  keyId: string;
  name: string;
  scopes: string[];
  keyHint: string;
  createdAt: string;
  lastUsedAt: string | null;
  expiresAt: string | null;
  rateLimit: RateLimit | null;
}

export interface AuthenticatedKey {
  tenantId: string;
  keyId: string;
  scopes: ReadonlySet<Scope>;
  rateLimit: RateLimit | null;
  /**
   * False when the key was let in from what the process saw of it earlier, on a route whose
   * write confirms it (decision 0028): the write, or a lookup before the answer, makes it true.
   */
  confirmed: boolean;
  /** The presented value's hash, to look the key up when it must be confirmed. */
  readonly hash: Buffer;
}

function toView(row: ApiKeyRow): ApiKeyView {
  return {
    keyId: row.id,
    name: row.name,
    scopes: row.scopes,
    keyHint: row.key_hint,
    createdAt: row.created_at.toISOString(),
    lastUsedAt: row.last_used_at?.toISOString() ?? null,
    expiresAt: row.expires_at?.toISOString() ?? null,
    rateLimit:
      row.rate_limit_per_second === null || row.rate_limit_burst === null
        ? null
        : { perSecond: row.rate_limit_per_second, burst: row.rate_limit_burst },
  };
}

function validate(input: CreateApiKeyInput, now: Date) {
  const problems: { path: string; message: string }[] = [];
  const name = input.name.trim();
  if (name.length === 0 || name.length > 200)
    problems.push({ path: "name", message: "must be 1 to 200 characters" });
  if (input.scopes.length === 0) problems.push({ path: "scopes", message: "must name at least one scope" });
  input.scopes.forEach((s, i) => {
    if (!isScope(s)) problems.push({ path: `scopes[${i}]`, message: `unknown scope "${s}"` });
  });
  let expiresAt: Date | null = null;
  if (input.expiresAt !== undefined && input.expiresAt !== null) {
    expiresAt = new Date(input.expiresAt);
    if (Number.isNaN(expiresAt.getTime())) {
      problems.push({ path: "expiresAt", message: "must be an RFC 3339 timestamp" });
    } else if (expiresAt <= now) {
      problems.push({ path: "expiresAt", message: "must be in the future" });
    }
  }
  if (input.rateLimit && input.rateLimit.burst < 1) {
    problems.push({ path: "rateLimit.burst", message: "must be at least 1" });
  }
  if (problems.length > 0) {
    throw badRequest(
      `invalid API key: ${problems.map((p) => `${p.path} ${p.message}`).join("; ")}`,
      problems,
    );
  }
  return { name, scopes: [...new Set(input.scopes)], expiresAt };
}

/** The audit rows of a key's creation and deletion, whatever the door: the key's view, never its value. */
export const apiKeyAudit = {
  create: (by: AuditBy) =>
    audited<ApiKeyView>(
      by,
      "apikey.create",
      (key) => `apikey:${key.keyId}`,
      (key) => ({ after: key }),
    ),
  delete: (by: AuditBy, keyId: string) =>
    audited<ApiKeyView>(by, "apikey.delete", `apikey:${keyId}`, (before) => ({ before })),
};

export async function createApiKey(
  ctx: AppContext,
  tenantId: string,
  input: CreateApiKeyInput,
  also?: InSameTransaction<ApiKeyView>,
): Promise<ApiKeyView & { key: string }> {
  await requireTenant(ctx.db.root, tenantId);
  const { name, scopes, expiresAt } = validate(input, new Date());
  const key = generateKeyValue(ctx.config.env);
  const view = await ctx.db.transaction(async (tx) => {
    const row = await insertApiKey(tx, {
      id: newKeyId(),
      tenantId,
      name,
      hash: hashKeyValue(key),
      hint: keyHint(key),
      scopes,
      rateLimit: input.rateLimit === undefined ? DEFAULT_RATE_LIMIT : input.rateLimit,
      expiresAt,
    });
    const created = toView(row);
    await also?.(tx, created);
    return created;
  });
  return { ...view, key };
}

export async function getApiKeys(ctx: AppContext, tenantId: string): Promise<ApiKeyView[]> {
  await requireTenant(ctx.db.root, tenantId);
  return (await listApiKeys(ctx.db.root, tenantId)).map(toView);
}

/** Deletes a key; `also` gets the key as it was, in the deletion's transaction. */
export async function removeApiKey(
  ctx: AppContext,
  tenantId: string,
  keyId: string,
  also?: InSameTransaction<ApiKeyView>,
): Promise<void> {
  await requireTenant(ctx.db.root, tenantId);
  await ctx.db.transaction(async (tx) => {
    const before = also ? (await listApiKeys(tx, tenantId)).find((k) => k.id === keyId) : undefined;
    if (!(await deleteApiKey(tx, tenantId, keyId))) throw notFound("API key");
    if (also && before) await also(tx, toView(before));
  });
}

const unauthorized = (message: string) => new AppError("unauthenticated", message);

/**
 * Key lookups of concurrent requests share one statement. Nothing is cached: every request's
 * lookup is a query sent after the request arrived.
 */
const keyLookups = oncePer((db: Db) => {
  const find = (hashes: Buffer[]) => findLiveKeysByHash(db.root, hashes);
  return new Batcher(find, { maxBatch: 128, lanes: 1 });
});

/**
 * Keys this process found live, by hash, for routes whose write confirms the key (decision
 * 0028). Nothing else is let in from here: every other request's key is looked up.
 */
const seenKeys = new WeakMap<Db, Map<string, ApiKeyRow>>();
/** Keys remembered per database before the memory starts again empty. */
const SEEN_KEYS_LIMIT = 10_000;

function seenKeysOf(db: Db): Map<string, ApiKeyRow> {
  let seen = seenKeys.get(db);
  if (!seen || seen.size >= SEEN_KEYS_LIMIT) {
    seen = new Map();
    seenKeys.set(db, seen);
  }
  return seen;
}

/**
 * Resolves a presented key value to its tenant and scopes, looked up in the database: a key
 * deleted a moment ago is refused on the very next request, by every process. With
 * `confirmedByWrite` (a route whose write confirms the key in its own statement, and which looks
 * it up before any other answer), a key this process found live before is let in unconfirmed.
 */
export async function authenticate(
  ctx: AppContext,
  value: string | undefined,
  confirmedByWrite = false,
): Promise<AuthenticatedKey> {
  if (!value) throw unauthorized("missing API key: send it in the X-API-Key header");
  const check = checkKeyValue(value, ctx.config.env);
  if (!check.ok) throw unauthorized(check.reason);
  const hash = hashKeyValue(value);
  const seen = confirmedByWrite ? seenKeysOf(ctx.db).get(hash.toString("hex")) : undefined;
  const row = seen ?? (await lookUpKey(ctx, hash));
  if (row.expires_at && row.expires_at <= new Date()) throw unauthorized("API key has expired");
  if (!row.last_used_at || Date.now() - row.last_used_at.getTime() > 60_000) {
    row.last_used_at = new Date();
    touchApiKey(ctx.db.root, row.tenant_id, row.id).catch((err) =>
      ctx.log.warn({ err, keyId: row.id }, "recording key use failed"),
    );
  }
  const view = toView(row);
  return {
    tenantId: row.tenant_id,
    keyId: row.id,
    scopes: new Set(row.scopes.filter(isScope)),
    rateLimit: view.rateLimit,
    confirmed: seen === undefined,
    hash,
  };
}

async function lookUpKey(ctx: AppContext, hash: Buffer): Promise<ApiKeyRow> {
  const seen = seenKeysOf(ctx.db);
  const row = await keyLookups(ctx.db).add(hash);
  if (!row) {
    seen.delete(hash.toString("hex"));
    throw unauthorized("unknown API key");
  }
  seen.set(hash.toString("hex"), row);
  return row;
}

/**
 * Confirms a key let in unconfirmed by looking it up: throws 401 when it is no longer live (it
 * was deleted or expired since the process last saw it).
 */
export async function confirmKey(ctx: AppContext, key: AuthenticatedKey): Promise<void> {
  if (key.confirmed) return;
  const row = await lookUpKey(ctx, key.hash);
  if (row.expires_at && row.expires_at <= new Date()) throw unauthorized("API key has expired");
  key.confirmed = true;
}
