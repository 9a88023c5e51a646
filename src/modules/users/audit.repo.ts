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

/** The tenant's audit log, newest first, keyset-paged by id. */
export function listAudit(
  db: Executor,
  tenantId: string,
  limit: number,
  beforeId?: number,
): Promise<AuditRow[]> {
  let query = db.selectFrom("console_audit").selectAll().where("tenant_id", "=", tenantId);
  if (beforeId !== undefined) query = query.where("id", "<", beforeId);
  return query.orderBy("id", "desc").limit(limit).execute();
}
