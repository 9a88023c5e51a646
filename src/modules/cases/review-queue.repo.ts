import { type Executor, keysetPage } from "../../platform/db/index.js";
import {
  type CaseFilters,
  type CaseKeyset,
  filterCases,
  type ListedCase,
  listedCases,
  type ScannedPage,
  scanEdge,
  upTo,
} from "./case-search.repo.js";

// The review queue's read of the cases table, for the console: the "All cases" view's query and
// filters, one status at a time, oldest first.

/** The statuses the review queue shows, in the order of its tabs. */
export const QUEUE_STATUSES = ["in_review", "waiting", "failed"] as const;
export type QueueStatus = (typeof QUEUE_STATUSES)[number];

/** One status of the queue; only cases created before `createdTo` (the age filter), of one tag (`among`). */
export type QueueFilters = Pick<CaseFilters, "type" | "workflowId" | "createdTo" | "among"> & {
  status: QueueStatus;
};

export type QueueRow = ListedCase;

/**
 * One page of the queue, oldest first, after the keyset position `after`. The index
 * `cases_tenant_status (tenant_id, status, created_at DESC, id DESC)`, read backwards, serves it.
 * With a tag (`among`), the page reads at most SCAN_LIMIT cases along it: the SCAN_LIMIT-th is
 * found first, and the page stops there (`scannedTo` when it is short).
 */
export async function listQueue(
  db: Executor,
  tenantId: string,
  f: QueueFilters,
  limit: number,
  after: CaseKeyset | undefined,
): Promise<ScannedPage<QueueRow>> {
  const position = after && ([after.createdAt, after.id] as const);
  // The plain bound on the time lets the index range start at the position (the keyset's own
  // condition, an OR, is exact but no index condition).
  let query = filterCases(listedCases(db, tenantId), f);
  if (after) query = query.where("created_at", ">=", after.createdAt);
  if (!f.among || f.among.length === 0)
    return { rows: await keysetPage(query, ["created_at", "id"], "asc", position, limit).execute() };
  const edge = await scanEdge(db, tenantId, f, "asc", after);
  const bounded = edge ? upTo(edge, "asc")(query) : query;
  const rows = await keysetPage(bounded, ["created_at", "id"], "asc", position, limit).execute();
  return rows.length < limit && edge ? { rows, scannedTo: edge } : { rows };
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
