import { type Executor, type InSameTransaction, json, type Row } from "../../platform/db/index.js";

export type AuditRow = Row<"console_audit">;

/**
 * Who made a change: their tenant, and the actor: `analyst:<userId>` for a console user,
 * `apikey:<keyId>` for a partner's key, `operator:<actor>` for the operator API and the CLI when
 * the request names an actor, `operator` when it does not.
 */
export interface AuditBy {
  tenantId: string;
  actor: string;
}

/** The operator API's (and so the CLI's) actor: `operator:<actor>` when the request names one. */
export function operatorActor(actor?: string | null): string {
  return actor ? `operator:${actor}` : "operator";
}

/** The operator acting on a tenant's data, as `operatorActor` names them. */
export function operatorBy(tenantId: string, actor?: string | null): AuditBy {
  return { tenantId, actor: operatorActor(actor) };
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

/**
 * The audit row of a change made through a service that takes an `also` callback, written in
 * that service's transaction, after the change and from its result: the change and its row
 * commit together or not at all (decision 0015).
 */
export function audited<R>(
  by: AuditBy,
  action: string,
  target: string | ((result: R) => string),
  change: (result: R) => { before?: unknown; after?: unknown } = () => ({}),
): InSameTransaction<R> {
  return (tx, result) =>
    insertAudit(
      tx,
      { tenantId: by.tenantId, actor: by.actor },
      action,
      typeof target === "string" ? target : target(result),
      change(result),
    );
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
