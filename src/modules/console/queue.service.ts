import type { AppContext } from "../../platform/context.js";
import { badRequest } from "../../platform/errors.js";
import { CASE_TYPES } from "../case-model/index.js";
import {
  countQueue,
  getReviewSlas,
  listCasesByDue,
  listQueue,
  QUEUE_STATUSES,
  type QueueRow,
  type QueueStatus,
} from "../cases/index.js";
import { casesTagged, getTagOptions } from "../tags/index.js";
import { getWorkflows } from "../workflows/index.js";
import { decodeCursor, nextCursor, sortOf, withDue } from "./list-order.js";

export const PAGE_SIZE = 50;
export const COUNT_CAP = 1000;

/** The age filter's choices: cases at least this old. */
export const AGES = { "1h": 1, "24h": 24, "3d": 72, "7d": 168, "30d": 720 } as const;
export type Age = keyof typeof AGES;

export interface QueueQuery {
  status?: string;
  type?: string;
  workflowId?: string;
  tag?: string;
  age?: string;
  /** `due`: by due date, the most overdue first; else oldest first. */
  sort?: string;
  cursor?: string;
}

export interface QueuePage {
  filters: { status: QueueStatus; type: string; workflowId: string; tag: string; age: string; sort: string };
  rows: Array<QueueRow & { dueAt: Date | null; overdue: boolean }>;
  counts: Record<QueueStatus, number>;
  nextCursor: string | null;
  /** Past the first page. */
  paged: boolean;
  /** The page stopped after reading its share of cases (a tag few carry): the next page reads on. */
  scanned: boolean;
  workflows: string[];
  tags: string[];
}

function oneOf<T extends string>(
  value: string | undefined,
  allowed: readonly T[],
  what: string,
): T | undefined {
  if (value === undefined || value === "") return undefined;
  if (!(allowed as readonly string[]).includes(value)) throw badRequest(`unknown ${what} "${value}"`);
  return value as T;
}

/** The review queue of a tenant: one status at a time, oldest first (or by due date), filtered and paged. */
export async function reviewQueue(ctx: AppContext, tenantId: string, q: QueueQuery): Promise<QueuePage> {
  const status = oneOf(q.status, QUEUE_STATUSES, "status") ?? "in_review";
  const type = oneOf(q.type, CASE_TYPES, "case type");
  const age = oneOf(q.age, Object.keys(AGES) as Age[], "age");
  const workflowId = q.workflowId?.slice(0, 200) || undefined;
  const tag = q.tag?.slice(0, 64) || undefined;
  const sort = sortOf(q.sort);
  const after = q.cursor ? decodeCursor(q.cursor, sort) : undefined;
  const createdTo = age ? new Date(Date.now() - AGES[age] * 3_600_000) : undefined;
  const slas = await getReviewSlas(ctx, tenantId);
  const filters = {
    status,
    type,
    workflowId,
    createdTo,
    among: tag ? [casesTagged(ctx.db.root, tenantId, tag)] : undefined,
  };
  const [listed, counts, workflows, tags] = await Promise.all([
    after?.kind === "created" || sort === ""
      ? listQueue(
          ctx.db.root,
          tenantId,
          filters,
          PAGE_SIZE + 1,
          after && { createdAt: after.at, id: after.id },
        )
      : listCasesByDue(ctx.db.root, tenantId, filters, slas, PAGE_SIZE + 1, after).then((rows) => ({
          rows,
          scannedTo: undefined,
        })),
    countQueue(ctx.db.root, tenantId, COUNT_CAP),
    getWorkflows(ctx, tenantId),
    getTagOptions(ctx, tenantId),
  ]);
  const { rows, scannedTo } = listed;
  const page = rows.slice(0, PAGE_SIZE);
  const now = Date.now();
  return {
    filters: { status, type: type ?? "", workflowId: workflowId ?? "", tag: tag ?? "", age: age ?? "", sort },
    rows: page.map((row) => withDue(row, slas, now)),
    counts,
    nextCursor: nextCursor(rows, PAGE_SIZE, sort, scannedTo),
    scanned: scannedTo !== undefined,
    paged: after !== undefined,
    workflows: workflows.map((w) => w.workflowId),
    tags: tags.map((t) => t.tag),
  };
}
