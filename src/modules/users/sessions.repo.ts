import { sql } from "kysely";
import { deleteRows, type Executor, type Tx, updateRows } from "../../platform/db/index.js";
import type { Role } from "./roles.js";

export interface SessionRow {
  tenant_id: string;
  user_id: string;
  last_seen_at: Date;
  expires_at: Date;
  email: string;
  name: string;
  role: Role;
  tenant_name: string;
}

export async function insertSession(
  db: Executor,
  s: { tokenHash: Buffer; tenantId: string; userId: string; expiresAt: Date },
): Promise<void> {
  await db
    .insertInto("console_sessions")
    .values({
      token_hash: s.tokenHash,
      tenant_id: s.tenantId,
      user_id: s.userId,
      last_seen_at: new Date(),
      expires_at: s.expiresAt,
    })
    .execute();
}

/** The live session with its user's current role: one query on every console request. */
export function findLiveSession(db: Executor, tokenHash: Buffer, now: Date): Promise<SessionRow | undefined> {
  return db
    .selectFrom("console_sessions as s")
    .innerJoin("console_users as u", (j) =>
      j.onRef("u.tenant_id", "=", "s.tenant_id").onRef("u.id", "=", "s.user_id"),
    )
    .innerJoin("tenants as t", "t.id", "s.tenant_id")
    .select([
      "s.tenant_id",
      "s.user_id",
      "s.last_seen_at",
      "s.expires_at",
      "u.email",
      "u.name",
      "u.role",
      "t.name as tenant_name",
    ])
    .where("s.token_hash", "=", tokenHash)
    .where("s.expires_at", ">", now)
    .executeTakeFirst();
}

export async function touchSession(db: Executor, tokenHash: Buffer, now: Date): Promise<void> {
  await updateRows(db, "console_sessions", { token_hash: tokenHash }, { last_seen_at: now });
}

export async function deleteSession(db: Executor, tokenHash: Buffer): Promise<void> {
  await deleteRows(db, "console_sessions", { token_hash: tokenHash });
}

export async function deleteUserSessions(db: Executor, tenantId: string, userId: string): Promise<void> {
  await deleteRows(db, "console_sessions", { tenant_id: tenantId, user_id: userId });
}

// Advisory lock classes (the two-key form): one account's sign-ins, one address's sign-ins.
const ACCOUNT_LOCK = 7101;
const ADDRESS_LOCK = 7102;

/**
 * Holds, until the transaction ends, the locks that serialise sign-ins of one account and of one
 * address on every process: taken in one order (account, then address), so two never wait on
 * each other in a circle.
 */
export async function lockSignins(tx: Tx, email: string, address: string): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(${ACCOUNT_LOCK}::int, hashtext(${email}))`.execute(tx);
  await sql`SELECT pg_advisory_xact_lock(${ADDRESS_LOCK}::int, hashtext(${address}))`.execute(tx);
}

/** Records an attempt as a failure until it succeeds (then `deleteSigninFailure` takes it back). */
export async function recordSigninFailure(db: Executor, email: string, address: string): Promise<number> {
  const row = await db
    .insertInto("console_signin_failures")
    .values({ email, address })
    .returning("id")
    .executeTakeFirstOrThrow();
  return row.id;
}

export async function deleteSigninFailure(db: Executor, id: number): Promise<void> {
  await db.deleteFrom("console_signin_failures").where("id", "=", id).execute();
}

export async function countSigninFailures(
  db: Executor,
  email: string,
  address: string,
  since: Date,
): Promise<{ byEmail: number; byAddress: number }> {
  const [byEmail, byAddress] = await Promise.all([
    db
      .selectFrom("console_signin_failures")
      .select((eb) => eb.fn.countAll<string>().as("n"))
      .where("email", "=", email)
      .where("at", ">", since)
      .executeTakeFirstOrThrow(),
    db
      .selectFrom("console_signin_failures")
      .select((eb) => eb.fn.countAll<string>().as("n"))
      .where("address", "=", address)
      .where("at", ">", since)
      .executeTakeFirstOrThrow(),
  ]);
  return { byEmail: Number(byEmail.n), byAddress: Number(byAddress.n) };
}

export async function clearSigninFailures(db: Executor, email: string, before: Date): Promise<void> {
  await db
    .deleteFrom("console_signin_failures")
    .where("email", "=", email)
    .where("at", "<", before)
    .execute();
}
