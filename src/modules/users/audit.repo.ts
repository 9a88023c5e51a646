import { type Executor, json, type Row } from "../../platform/db/index.js";

export type AuditRow = Row<"console_audit">;

/** Who made a change: their tenant, and `analyst:<userId>` for a console user, `operator` for the operator API. */
export interface AuditBy {
  tenantId: string;
  actor: string;
}

/**
 * Records a change in the audit log: `action` is what was done, as `<thing>.<verb>` (`case.override`,
 * `user.create`, …), `target` what it was done to (`case:<id>`, `user:<id>`, `tag:<tag>`, …), and
 * `change` the state before and after, where it has one.
 */
export async function insertAudit(
  db: Executor,
  by: AuditBy,
  action: string,
  target: string,
  change: { before?: unknown; after?: unknown } = {},
): Promise<void> {
  await db
    .insertInto("console_audit")
    .values({
      tenant_id: by.tenantId,
      actor: by.actor,
      action,
      target,
      before: change.before === undefined ? null : json(change.before),
      after: change.after === undefined ? null : json(change.after),
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
