import { type Executor, keysetPage } from "../../platform/db/index.js";
import { type CaseFilters, filterCases, type ListedCase, listedCases } from "./case-search.repo.js";

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
 * How many cases of the status a page filtered by another module's ids (a tag) reads at most:
 * a tag that few of them carry, or none, would otherwise have the page read the whole status.
 */
export const QUEUE_SCAN = 2000;

export interface QueuePageRows {
  rows: QueueRow[];
  /**
   * Set when fewer than `limit` rows matched within the QUEUE_SCAN cases read: the last case read,
   * where the next page goes on.
   */
  scannedTo?: { createdAt: Date; id: string };
}

/**
 * One page of the queue, oldest first, after the keyset position `after`. The index
 * `cases_tenant_status (tenant_id, status, created_at DESC, id DESC)`, read backwards, serves it.
 * With a tag (`among`), the page reads at most QUEUE_SCAN cases along it: the QUEUE_SCAN-th is
 * found first, and the page stops there.
 */
export async function listQueue(
  db: Executor,
  tenantId: string,
  f: QueueFilters,
  limit: number,
  after: { createdAt: Date; id: string } | undefined,
): Promise<QueuePageRows> {
  const position = after && ([after.createdAt, after.id] as const);
  // The plain `>=` / `<=` on the time bound the index range; the keyset's own condition (an OR)
  // is exact but is no index condition.
  const from = <Q extends ReturnType<typeof listedCases>>(q: Q): Q =>
    (after ? q.where("created_at", ">=", after.createdAt) : q) as Q;
  const query = from(filterCases(listedCases(db, tenantId), f));
  if (!f.among || f.among.length === 0)
    return { rows: await keysetPage(query, ["created_at", "id"], "asc", position, limit).execute() };
  const edge = await keysetPage(
    from(filterCases(listedCases(db, tenantId), { ...f, among: undefined })),
    ["created_at", "id"],
    "asc",
    position,
    1,
  )
    .offset(QUEUE_SCAN - 1)
    .executeTakeFirst();
  const bounded = edge
    ? query
        .where("created_at", "<=", edge.created_at)
        .where((eb) =>
          eb.or([
            eb("created_at", "<", edge.created_at),
            eb.and([eb("created_at", "=", edge.created_at), eb("id", "<=", edge.id)]),
          ]),
        )
    : query;
  const rows = await keysetPage(bounded, ["created_at", "id"], "asc", position, limit).execute();
  return rows.length < limit && edge
    ? { rows, scannedTo: { createdAt: edge.created_at, id: edge.id } }
    : { rows };
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
