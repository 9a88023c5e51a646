import type { Selectable } from "kysely";
import { type Executor, json } from "../../platform/db/index.js";
import type { ConsoleAuditTable } from "./users.tables.js";

export type AuditRow = Selectable<ConsoleAuditTable>;

export interface AuditEntry {
  tenantId: string;
  /** `analyst:<userId>` for a console user, `operator` for the operator API. */
  actor: string;
  /** What was done, as `<thing>.<verb>`: `case.override`, `user.create`, … */
  action: string;
  /** What it was done to: `case:<id>`, `user:<id>`, `tag:<tag>`, … */
  target: string;
  before?: unknown;
  after?: unknown;
}

export async function insertAudit(db: Executor, e: AuditEntry): Promise<void> {
  await db
    .insertInto("console_audit")
    .values({
      tenant_id: e.tenantId,
      actor: e.actor,
      action: e.action,
      target: e.target,
      before: e.before === undefined ? null : json(e.before),
      after: e.after === undefined ? null : json(e.after),
    })
    .execute();
}

/** What the audit log is filtered by. */
export interface AuditFilters {
  actor?: string;
  /** An action (`case.override`) or a family of them (`case.`). */
  action?: string;
  target?: string;
  from?: Date;
  to?: Date;
}

/** The tenant's audit log, filtered, newest first, keyset-paged by id. */
export function searchAudit(
  db: Executor,
  tenantId: string,
  f: AuditFilters,
  limit: number,
  beforeId?: number,
): Promise<AuditRow[]> {
  let query = db.selectFrom("console_audit").selectAll().where("tenant_id", "=", tenantId);
  if (f.actor) query = query.where("actor", "=", f.actor);
  if (f.action)
    query = f.action.endsWith(".")
      ? query.where("action", "like", `${f.action.replace(/[\\%_]/g, "\\$&")}%`)
      : query.where("action", "=", f.action);
  if (f.target) query = query.where("target", "=", f.target);
  if (f.from) query = query.where("at", ">=", f.from);
  if (f.to) query = query.where("at", "<", f.to);
  if (beforeId !== undefined) query = query.where("id", "<", beforeId);
  return query.orderBy("id", "desc").limit(limit).execute();
}
