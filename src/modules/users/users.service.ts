import type { AppContext } from "../../platform/context.js";
import { isUuid, sha256, uuid } from "../../platform/crypto.js";
import { type Executor, isUniqueViolation } from "../../platform/db/index.js";
import { AppError, badRequest, type ErrorDetail, notFound } from "../../platform/errors.js";
import { requireTenant } from "../tenants/index.js";
import { insertAudit } from "./audit.repo.js";
import { hashPassword, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from "./password.js";
import { isRole, ROLES, type Role } from "./roles.js";
import { deleteUserSessions } from "./sessions.repo.js";
import { newSecretToken } from "./tokens.js";
import {
  deleteUser,
  findUser,
  findUserBySetupToken,
  insertUser,
  listUsers,
  type UserRow,
  updateUser,
} from "./users.repo.js";

/** How long a setup link stays usable. */
export const SETUP_LINK_DAYS = 7;

export interface UserView {
  userId: string;
  email: string;
  name: string;
  role: Role;
  /** `invited` until the setup link has been used to set a password. */
  status: "invited" | "active";
  createdAt: string;
}

export interface CreatedUser extends UserView {
  /** The one-time link to set a password; shown this once. */
  setupUrl: string;
  setupExpiresAt: string;
}

export interface UserInput {
  email: string;
  name: string;
  role: string;
}

export function toUserView(row: UserRow): UserView {
  return {
    userId: row.id,
    email: row.email,
    name: row.name,
    role: row.role,
    status: row.password_hash === null ? "invited" : "active",
    createdAt: row.created_at.toISOString(),
  };
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

function checkUser(input: UserInput): { email: string; name: string; role: Role } {
  const details: ErrorDetail[] = [];
  const email = input.email.trim().toLowerCase();
  const name = input.name.trim();
  if (!EMAIL.test(email) || email.length > 320)
    details.push({ path: "email", message: "must be an email address" });
  if (name.length === 0 || name.length > 200)
    details.push({ path: "name", message: "must be 1 to 200 characters" });
  if (!isRole(input.role)) details.push({ path: "role", message: `must be one of: ${ROLES.join(", ")}` });
  if (details.length > 0) {
    throw badRequest(`invalid user: ${details.map((d) => `${d.path} ${d.message}`).join("; ")}`, details);
  }
  return { email, name, role: input.role as Role };
}

function setupLink(ctx: AppContext) {
  const token = newSecretToken();
  return {
    token,
    hash: sha256(token),
    url: `${ctx.config.publicUrl}/console/setup?token=${token}`,
    expiresAt: new Date(Date.now() + SETUP_LINK_DAYS * 86_400_000),
  };
}

/** Creates a user of the tenant with a one-time setup link (`by`: who, for the audit log). */
export async function createUser(
  ctx: AppContext,
  tenantId: string,
  input: UserInput,
  by: string,
): Promise<CreatedUser> {
  await requireTenant(ctx.db.root, tenantId);
  const { email, name, role } = checkUser(input);
  const link = setupLink(ctx);
  try {
    const row = await ctx.db.transaction(async (tx) => {
      const created = await insertUser(tx, {
        id: uuid(),
        tenantId,
        email,
        name,
        role,
        setupTokenHash: link.hash,
        setupExpiresAt: link.expiresAt,
      });
      await insertAudit(tx, { tenantId, actor: by }, "user.create", `user:${created.id}`, {
        after: { name: created.name, email: created.email, role: created.role },
      });
      return created;
    });
    return { ...toUserView(row), setupUrl: link.url, setupExpiresAt: link.expiresAt.toISOString() };
  } catch (err) {
    if (isUniqueViolation(err, "console_users_email")) {
      throw new AppError("conflict", "a console user with this email already exists", {
        details: [{ path: "email", message: "is already in use" }],
      });
    }
    throw err;
  }
}

export async function getUsers(ctx: AppContext, tenantId: string): Promise<UserView[]> {
  await requireTenant(ctx.db.root, tenantId);
  return (await listUsers(ctx.db.root, tenantId)).map(toUserView);
}

export async function getUser(ctx: AppContext, tenantId: string, userId: string): Promise<UserView> {
  const row = isUuid(userId) ? await findUser(ctx.db.root, tenantId, userId) : undefined;
  if (!row) throw notFound("user");
  return toUserView(row);
}

/** Deletes the user; every session of theirs ends with the row, on every process. */
export async function removeUser(
  ctx: AppContext,
  tenantId: string,
  userId: string,
  by: string,
): Promise<void> {
  await requireTenant(ctx.db.root, tenantId);
  if (!isUuid(userId)) throw notFound("user");
  await ctx.db.transaction(async (tx) => {
    const row = await findUser(tx, tenantId, userId, true);
    if (!row) throw notFound("user");
    await deleteUser(tx, tenantId, userId);
    await insertAudit(tx, { tenantId, actor: by }, "user.delete", `user:${userId}`, {
      before: { name: row.name, email: row.email, role: row.role },
    });
  });
}

/** A new role takes effect at once: the user's sessions end and they sign in again. */
export async function changeRole(
  ctx: AppContext,
  tenantId: string,
  userId: string,
  role: string,
  by: string,
): Promise<UserView> {
  if (!isRole(role)) {
    throw badRequest(`role must be one of: ${ROLES.join(", ")}`, [
      { path: "role", message: `must be one of: ${ROLES.join(", ")}` },
    ]);
  }
  if (!isUuid(userId)) throw notFound("user");
  return ctx.db.transaction(async (tx) => {
    const row = await findUser(tx, tenantId, userId, true);
    if (!row) throw notFound("user");
    if (row.role === role) return toUserView(row);
    const updated = await updateUser(tx, tenantId, userId, { role });
    if (!updated) throw notFound("user");
    await deleteUserSessions(tx, tenantId, userId);
    await insertAudit(tx, { tenantId, actor: by }, "user.role", `user:${userId}`, {
      before: { role: row.role },
      after: { role },
    });
    return toUserView(updated);
  });
}

/** A fresh one-time setup link (the old one stops working); also how a password is reset. */
export async function renewSetupLink(
  ctx: AppContext,
  tenantId: string,
  userId: string,
  by: string,
): Promise<CreatedUser> {
  if (!isUuid(userId)) throw notFound("user");
  const link = setupLink(ctx);
  const row = await ctx.db.transaction(async (tx) => {
    const updated = await updateUser(tx, tenantId, userId, {
      setup_token_hash: link.hash,
      setup_expires_at: link.expiresAt,
    });
    if (!updated) throw notFound("user");
    await insertAudit(tx, { tenantId, actor: by }, "user.setup_link", `user:${userId}`);
    return updated;
  });
  return { ...toUserView(row), setupUrl: link.url, setupExpiresAt: link.expiresAt.toISOString() };
}

/** The user of a setup link still usable, else `gone`. */
function usable(row: UserRow | undefined): UserRow {
  if (!row?.setup_expires_at || row.setup_expires_at <= new Date()) {
    throw new AppError("gone", "this setup link is not valid: it was used already, replaced or has expired");
  }
  return row;
}

const findBySetupToken = (db: Executor, token: string) =>
  token.length > 0 && token.length <= 100
    ? findUserBySetupToken(db, sha256(token))
    : Promise.resolve(undefined);

/** Who a setup link is for (the setup page greets them), or `gone`. */
export async function setupFor(ctx: AppContext, token: string): Promise<UserView> {
  return toUserView(usable(await findBySetupToken(ctx.db.root, token)));
}

export function checkPassword(password: string): void {
  if (password.length < MIN_PASSWORD_LENGTH || password.length > MAX_PASSWORD_LENGTH) {
    throw badRequest(`the password must be ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters`, [
      {
        path: "password",
        message: `must be ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters`,
      },
    ]);
  }
}

/** Uses the one-time link: sets the password, spends the link, ends any older sessions. */
export async function completeSetup(ctx: AppContext, token: string, password: string): Promise<UserView> {
  checkPassword(password);
  const hash = await hashPassword(password);
  return ctx.db.transaction(async (tx) => {
    const row = usable(await findBySetupToken(tx, token));
    const updated = await updateUser(tx, row.tenant_id, row.id, {
      password_hash: hash,
      setup_token_hash: null,
      setup_expires_at: null,
    });
    if (!updated) throw notFound("user");
    await deleteUserSessions(tx, row.tenant_id, row.id);
    await insertAudit(
      tx,
      { tenantId: row.tenant_id, actor: `analyst:${row.id}` },
      "user.password_set",
      `user:${row.id}`,
    );
    return toUserView(updated);
  });
}
