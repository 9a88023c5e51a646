import type { Selectable } from "kysely";
import { isUuid } from "../../platform/crypto.js";
import type { Executor } from "../../platform/db/index.js";
import type { CasesTable } from "../../platform/db/schema.js";

export type CaseRow = Selectable<CasesTable>;

export interface NewCase {
  id: string;
  tenantId: string;
  requestId: string;
  status: string;
  type: string;
  workflowId: string;
  workflowVersion: number;
  subject: Record<string, unknown>;
  payload: Record<string, unknown>;
  metadata: Record<string, unknown>;
  externalCustomerId: string | null;
  eventTimestamp: Date | null;
  idempotencyKey: string | null;
  dryRun: boolean;
}

export function insertCase(db: Executor, c: NewCase): Promise<CaseRow> {
  return db
    .insertInto("cases")
    .values({
      id: c.id,
      tenant_id: c.tenantId,
      request_id: c.requestId,
      status: c.status,
      type: c.type,
      workflow_id: c.workflowId,
      workflow_version: c.workflowVersion,
      subject: JSON.stringify(c.subject),
      payload: JSON.stringify(c.payload),
      metadata: JSON.stringify(c.metadata),
      external_customer_id: c.externalCustomerId,
      event_timestamp: c.eventTimestamp,
      idempotency_key: c.idempotencyKey,
      dry_run: c.dryRun,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The tenant's case, or undefined for an unknown id, a malformed id or another tenant's case. */
export async function findCase(db: Executor, tenantId: string, caseId: string): Promise<CaseRow | undefined> {
  if (!isUuid(caseId)) return undefined;
  return db
    .selectFrom("cases")
    .selectAll()
    .where("tenant_id", "=", tenantId)
    .where("id", "=", caseId)
    .executeTakeFirst();
}

/** Whether the tenant has this case, without reading it. */
export async function caseExists(db: Executor, tenantId: string, caseId: string): Promise<boolean> {
  if (!isUuid(caseId)) return false;
  const row = await db
    .selectFrom("cases")
    .select("id")
    .where("tenant_id", "=", tenantId)
    .where("id", "=", caseId)
    .executeTakeFirst();
  return row !== undefined;
}
