import { type SelectQueryBuilder, sql } from "kysely";
import { type Database, type Executor, keysetPage } from "../../platform/db/index.js";

// The review queue's read of the cases table, for the console. Filters on what other modules
// keep of a case (its tags) come in as a subquery of case ids written by their owner.

/** The statuses the review queue shows, in the order of its tabs. */
export const QUEUE_STATUSES = ["in_review", "waiting", "failed"] as const;
export type QueueStatus = (typeof QUEUE_STATUSES)[number];

export interface QueueFilters {
  status: QueueStatus;
  type?: string;
  workflowId?: string;
  /** Only the cases among these ids (a subquery of another module's: the cases with a tag). */
  among?: SelectQueryBuilder<Database, keyof Database, { case_id: string }>;
  /** Only cases created before this instant (the age filter). */
  createdBefore?: Date;
}

export interface QueueRow {
  id: string;
  status: string;
  type: string;
  workflow_id: string;
  workflow_version: number;
  display_name: string | null;
  external_customer_id: string | null;
  decision_value: string | null;
  created_at: Date;
  updated_at: Date;
}

/**
 * One page of the queue, oldest first, after the keyset position `after`. The index
 * `cases_tenant_status (tenant_id, status, created_at DESC, id DESC)`, read backwards, serves it.
 */
export function listQueue(
  db: Executor,
  tenantId: string,
  f: QueueFilters,
  limit: number,
  after: { createdAt: Date; id: string } | undefined,
): Promise<QueueRow[]> {
  let query = db
    .selectFrom("cases")
    .select([
      "id",
      "status",
      "type",
      "workflow_id",
      "workflow_version",
      "external_customer_id",
      "created_at",
      "updated_at",
      sql<string | null>`subject->>'displayName'`.as("display_name"),
      sql<string | null>`decision->>'value'`.as("decision_value"),
    ])
    .where("tenant_id", "=", tenantId)
    .where("status", "=", f.status)
    .where("dry_run", "=", false);
  if (f.type) query = query.where("type", "=", f.type);
  if (f.workflowId) query = query.where("workflow_id", "=", f.workflowId);
  if (f.createdBefore) query = query.where("created_at", "<", f.createdBefore);
  if (f.among) query = query.where("id", "in", f.among);
  const position = after && ([after.createdAt, after.id] as const);
  return keysetPage(query, ["created_at", "id"], "asc", position, limit).execute();
}

/** How many cases each tab holds, counted up to `cap` (a tab shows "1000+" past it). */
export async function countQueue(
  db: Executor,
  tenantId: string,
  cap: number,
): Promise<Record<QueueStatus, number>> {
  const counts = await Promise.all(
    QUEUE_STATUSES.map(async (status) => {
      const row = await db
        .selectFrom((eb) =>
          eb
            .selectFrom("cases")
            .select("id")
            .where("tenant_id", "=", tenantId)
            .where("status", "=", status)
            .where("dry_run", "=", false)
            .limit(cap)
            .as("capped"),
        )
        .select((eb) => eb.fn.countAll<string>().as("n"))
        .executeTakeFirstOrThrow();
      return [status, Number(row.n)] as const;
    }),
  );
  return Object.fromEntries(counts) as Record<QueueStatus, number>;
}
