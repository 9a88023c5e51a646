import type { Selectable } from "kysely";
import type { Executor } from "../../platform/db/index.js";
import type { Role } from "./roles.js";
import type { ConsoleUsersTable } from "./users.tables.js";

export type UserRow = Selectable<ConsoleUsersTable>;

export interface NewUser {
  id: string;
  tenantId: string;
  email: string;
  name: string;
  role: Role;
  setupTokenHash: Buffer;
  setupExpiresAt: Date;
}

export function insertUser(db: Executor, u: NewUser): Promise<UserRow> {
  return db
    .insertInto("console_users")
    .values({
      id: u.id,
      tenant_id: u.tenantId,
      email: u.email,
      name: u.name,
      role: u.role,
      setup_token_hash: u.setupTokenHash,
      setup_expires_at: u.setupExpiresAt,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function listUsers(db: Executor, tenantId: string): Promise<UserRow[]> {
  return db
    .selectFrom("console_users")
    .selectAll()
    .where("tenant_id", "=", tenantId)
    .orderBy("created_at")
    .orderBy("id")
    .execute();
}

export function findUser(
  db: Executor,
  tenantId: string,
  userId: string,
  lock = false,
): Promise<UserRow | undefined> {
  let query = db
    .selectFrom("console_users")
    .selectAll()
    .where("tenant_id", "=", tenantId)
    .where("id", "=", userId);
  if (lock) query = query.forUpdate();
  return query.executeTakeFirst();
}

/** Sign-in names no tenant: the email alone finds the user. */
export function findUserByEmail(db: Executor, email: string): Promise<UserRow | undefined> {
  return db.selectFrom("console_users").selectAll().where("email", "=", email).executeTakeFirst();
}

export function findUserBySetupToken(db: Executor, tokenHash: Buffer): Promise<UserRow | undefined> {
  return db
    .selectFrom("console_users")
    .selectAll()
    .where("setup_token_hash", "=", tokenHash)
    .forUpdate()
    .executeTakeFirst();
}

export async function updateUser(
  db: Executor,
  tenantId: string,
  userId: string,
  patch: {
    role?: Role;
    name?: string;
    password_hash?: string;
    setup_token_hash?: Buffer | null;
    setup_expires_at?: Date | null;
  },
): Promise<UserRow | undefined> {
  return db
    .updateTable("console_users")
    .set({ ...patch, updated_at: new Date() })
    .where("tenant_id", "=", tenantId)
    .where("id", "=", userId)
    .returningAll()
    .executeTakeFirst();
}

/** Deletes the user; the sessions go with it (ON DELETE CASCADE). */
export async function deleteUser(db: Executor, tenantId: string, userId: string): Promise<boolean> {
  const res = await db
    .deleteFrom("console_users")
    .where("tenant_id", "=", tenantId)
    .where("id", "=", userId)
    .executeTakeFirst();
  return res.numDeletedRows > 0n;
}
