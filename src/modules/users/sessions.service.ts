import type { AppContext } from "../../platform/context.js";
import { sha256 } from "../../platform/crypto.js";
import { AppError } from "../../platform/errors.js";
import { verifyDecoy, verifyPassword } from "./password.js";
import type { Role } from "./roles.js";
import {
  clearSigninFailures,
  countSigninFailures,
  deleteSession,
  deleteSigninFailure,
  findLiveSession,
  insertSession,
  lockSignins,
  recordSigninFailure,
  touchSession,
} from "./sessions.repo.js";
import { newSecretToken } from "./tokens.js";
import { findUserByEmail } from "./users.repo.js";

/** A session lasts one working day at most; signing out or losing the user ends it sooner. */
export const SESSION_HOURS = 12;

/**
 * Sign-in limits over a sliding window, counted in the database so that every process sees the
 * same counts: failures per account stop guessing one password, failures per address stop
 * trying many accounts from one place.
 */
export const SIGNIN_LIMITS = { windowMinutes: 15, perAccount: 5, perAddress: 30 } as const;

export interface ConsoleSession {
  tenantId: string;
  tenantName: string;
  userId: string;
  email: string;
  name: string;
  role: Role;
  /** `analyst:<userId>`: the actor of every change made in this session. */
  actor: string;
}

function unauthorized(): AppError {
  return new AppError("unauthenticated", "the email or password is not right");
}

/** Checks the password and opens a session: its token goes in the cookie, its hash in the database. */
export async function signIn(
  ctx: AppContext,
  rawEmail: string,
  password: string,
  address: string,
): Promise<{ token: string; session: ConsoleSession }> {
  const email = rawEmail.trim().toLowerCase().slice(0, 320);
  const now = new Date();
  const since = new Date(now.getTime() - SIGNIN_LIMITS.windowMinutes * 60_000);
  // The attempt is counted before its password is checked, under locks every process shares:
  // of any number of simultaneous attempts, only those within the limit reach the check.
  const attempt = await ctx.db.transaction(async (tx) => {
    await lockSignins(tx, email, address);
    const failures = await countSigninFailures(tx, email, address, since);
    if (failures.byEmail >= SIGNIN_LIMITS.perAccount || failures.byAddress >= SIGNIN_LIMITS.perAddress)
      return undefined;
    return recordSigninFailure(tx, email, address);
  });
  if (attempt === undefined) {
    throw new AppError(
      "rate_limited",
      `too many failed sign-ins: try again in ${SIGNIN_LIMITS.windowMinutes} minutes`,
      { headers: { "retry-after": String(SIGNIN_LIMITS.windowMinutes * 60) } },
    );
  }
  const user = email.length > 0 ? await findUserByEmail(ctx.db.root, email) : undefined;
  const ok =
    user?.password_hash && password.length <= 256
      ? await verifyPassword(password, user.password_hash)
      : await verifyDecoy(password.slice(0, 256));
  // A failed attempt stays recorded as it was counted.
  if (!user || !ok) throw unauthorized();
  await deleteSigninFailure(ctx.db.root, attempt);
  const token = newSecretToken();
  await insertSession(ctx.db.root, {
    tokenHash: sha256(token),
    tenantId: user.tenant_id,
    userId: user.id,
    expiresAt: new Date(now.getTime() + SESSION_HOURS * 3_600_000),
  });
  await clearSigninFailures(ctx.db.root, email, now);
  return {
    token,
    session: {
      tenantId: user.tenant_id,
      tenantName: "",
      userId: user.id,
      email: user.email,
      name: user.name,
      role: user.role,
      actor: `analyst:${user.id}`,
    },
  };
}

/**
 * The live session of a cookie's token, read from the database on every request: no cache, so a
 * sign-out, a deleted user or a changed role ends it at once on every process.
 */
export async function sessionFor(
  ctx: AppContext,
  token: string | undefined,
): Promise<ConsoleSession | undefined> {
  if (!token || token.length > 100) return undefined;
  const hash = sha256(token);
  const now = new Date();
  const row = await findLiveSession(ctx.db.root, hash, now);
  if (!row) return undefined;
  if (now.getTime() - row.last_seen_at.getTime() > 60_000) {
    touchSession(ctx.db.root, hash, now).catch((err) =>
      ctx.log.warn({ err }, "recording session use failed"),
    );
  }
  return {
    tenantId: row.tenant_id,
    tenantName: row.tenant_name,
    userId: row.user_id,
    email: row.email,
    name: row.name,
    role: row.role,
    actor: `analyst:${row.user_id}`,
  };
}

export async function signOut(ctx: AppContext, token: string | undefined): Promise<void> {
  if (token && token.length <= 100) await deleteSession(ctx.db.root, sha256(token));
}
