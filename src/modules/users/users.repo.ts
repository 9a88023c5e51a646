import { deleteRows, type Executor, findRow, findRows, type Row } from "../../platform/db/index.js";
import type { Role } from "./roles.js";

export type UserRow = Row<"console_users">;

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
  return findRows(db, "console_users", { tenant_id: tenantId }, ["created_at", "id"]);
}

export function findUser(
  db: Executor,
  tenantId: string,
  userId: string,
  lock = false,
): Promise<UserRow | undefined> {
  return findRow(db, "console_users", { tenant_id: tenantId, id: userId }, { forUpdate: lock });
}

/** Sign-in names no tenant: the email alone finds the user. */
export function findUserByEmail(db: Executor, email: string) {
  return findRow(db, "console_users", { email });
}

export function findUserBySetupToken(db: Executor, tokenHash: Buffer) {
  return findRow(db, "console_users", { setup_token_hash: tokenHash }, { forUpdate: true });
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
  return (await deleteRows(db, "console_users", { tenant_id: tenantId, id: userId })) > 0;
}
