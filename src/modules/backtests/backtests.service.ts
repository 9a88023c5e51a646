import type { AppContext } from "../../platform/context.js";
import { isUuid, uuid } from "../../platform/crypto.js";
import { AppError, notFound } from "../../platform/errors.js";
import { enqueue } from "../../platform/jobs.js";
import type { Replayed } from "../engine/index.js";
import { requireTenant } from "../tenants/index.js";
import { insertAudit } from "../users/index.js";
import { getCompiledWorkflow, requireVersion } from "../workflows/index.js";
import {
  type BacktestCaseRow,
  type BacktestRow,
  casesPage,
  countRunning,
  findBacktest,
  insertBacktest,
  listBacktests,
  lockBacktest,
  updateBacktest,
} from "./backtests.repo.js";
import type { StoredSummary } from "./backtests.tables.js";

/** The limits of backtests (contract section 8). */
export const BACKTEST_LIMITS = {
  /** Backtests of one tenant running at once. */
  running: 3,
  /** The longest window, in days. */
  windowDays: 366,
  /** The largest sample. */
  sample: 100_000,
  /** Cases per page of results. */
  pageDefault: 100,
  pageMax: 1000,
  /** Backtests listed. */
  listed: 100,
} as const;

/** The job that runs a backtest, on the backtests' own worker. */
export const BACKTEST_JOB = "backtest.run";

export interface BacktestRequest {
  workflowId: string;
  version: number;
  from: string;
  to: string;
  caseType?: string;
  sample?: number;
}

export interface SummaryView {
  decisions: Record<string, Record<string, number>>;
  changed: number;
  unchanged: number;
  needsInput: number;
  errors: number;
  nodes: Array<{ nodeId: string; reached: number; reachedBefore: number }>;
}

export interface BacktestView {
  backtestId: string;
  workflowId: string;
  version: number;
  from: string;
  to: string;
  caseType: string | null;
  sample: number | null;
  status: BacktestRow["status"];
  total: number;
  done: number;
  summary: SummaryView;
  error: string | null;
  createdAt: string;
  finishedAt: string | null;
}

export function emptySummary(): StoredSummary {
  return { decisions: {}, changed: 0, unchanged: 0, needsInput: 0, errors: 0, nodes: {} };
}

/** The summary, its nodes in the order the candidate defines them (any other after them, by id). */
function summaryView(s: StoredSummary, order: readonly string[]): SummaryView {
  const rank = (id: string) => {
    const at = order.indexOf(id);
    return at < 0 ? order.length : at;
  };
  const nodes = Object.entries(s.nodes).map(([nodeId, n]) => ({ nodeId, ...n }));
  nodes.sort((a, b) => rank(a.nodeId) - rank(b.nodeId) || a.nodeId.localeCompare(b.nodeId));
  return {
    decisions: s.decisions,
    changed: s.changed,
    unchanged: s.unchanged,
    needsInput: s.needsInput,
    errors: s.errors,
    nodes,
  };
}

/** The backtest as the API shows it, with its candidate's node order (the compiled version is cached). */
async function viewOf(ctx: AppContext, row: BacktestRow): Promise<BacktestView> {
  const wf = await getCompiledWorkflow(
    ctx.nodeTypes,
    ctx.db.root,
    row.tenant_id,
    row.workflow_id,
    row.version,
  );
  return backtestView(row, wf ? [...wf.nodes.keys()] : []);
}

function backtestView(row: BacktestRow, order: readonly string[]): BacktestView {
  return {
    backtestId: row.id,
    workflowId: row.workflow_id,
    version: row.version,
    from: row.window_from.toISOString(),
    to: row.window_to.toISOString(),
    caseType: row.case_type,
    sample: row.sample,
    status: row.status,
    total: row.total ?? 0,
    done: row.done,
    summary: summaryView(row.summary, order),
    error: row.error,
    createdAt: row.created_at.toISOString(),
    finishedAt: row.finished_at?.toISOString() ?? null,
  };
}

const DAY_MS = 86_400_000;

function instant(value: string, field: string): Date {
  const at = new Date(value);
  if (Number.isNaN(at.getTime())) {
    throw new AppError("invalid_request", `${field} must be a date-time`, {
      details: [{ path: field, message: "must be an RFC 3339 date-time" }],
    });
  }
  return at;
}

/**
 * Starts a backtest of a version over the workflow's cases accepted in `[from, to)`: 404 for an
 * unknown workflow or version, 400 for a window that is empty, reversed or longer than 366 days,
 * 409 `backtest_limit_reached` while 3 of the tenant's run. Its job chooses the cases and
 * replays them, batch by batch, on the backtests' worker.
 */
export async function startBacktest(
  ctx: AppContext,
  tenantId: string,
  body: BacktestRequest,
  actor = "operator",
): Promise<BacktestView> {
  const wf = await requireVersion(ctx, tenantId, body.workflowId, body.version);
  const from = instant(body.from, "from");
  const to = instant(body.to, "to");
  if (from.getTime() >= to.getTime()) {
    throw new AppError("invalid_request", "from must be before to", {
      details: [{ path: "from", message: "must be before to" }],
    });
  }
  if (to.getTime() - from.getTime() > BACKTEST_LIMITS.windowDays * DAY_MS) {
    throw new AppError("invalid_request", `the window is longer than ${BACKTEST_LIMITS.windowDays} days`, {
      details: [{ path: "to", message: `must be at most ${BACKTEST_LIMITS.windowDays} days after from` }],
    });
  }
  const row = await ctx.db.transaction(async (tx) => {
    if ((await countRunning(tx, tenantId)) >= BACKTEST_LIMITS.running) {
      throw new AppError(
        "backtest_limit_reached",
        `the tenant has ${BACKTEST_LIMITS.running} backtests running; cancel one or wait for it to end`,
      );
    }
    const created = await insertBacktest(tx, {
      id: uuid(),
      tenantId,
      workflowId: body.workflowId,
      version: body.version,
      from,
      to,
      caseType: body.caseType ?? null,
      sample: body.sample ?? null,
      summary: emptySummary(),
    });
    await insertAudit(tx, { tenantId, actor }, "backtest.start", `workflow:${body.workflowId}`, {
      after: { backtestId: created.id, version: body.version, from: body.from, to: body.to },
    });
    await enqueue(tx, {
      kind: BACKTEST_JOB,
      payload: { tenantId, backtestId: created.id },
      jobKey: `${BACKTEST_JOB}:${created.id}`,
    });
    return created;
  });
  return backtestView(row, [...wf.nodes.keys()]);
}

async function requireBacktest(ctx: AppContext, tenantId: string, backtestId: string): Promise<BacktestRow> {
  await requireTenant(ctx.db.root, tenantId);
  const row = isUuid(backtestId) ? await findBacktest(ctx.db.root, tenantId, backtestId) : undefined;
  if (!row) throw notFound("backtest");
  return row;
}

export async function getBacktest(
  ctx: AppContext,
  tenantId: string,
  backtestId: string,
): Promise<BacktestView> {
  return viewOf(ctx, await requireBacktest(ctx, tenantId, backtestId));
}

export async function getBacktests(
  ctx: AppContext,
  tenantId: string,
): Promise<{ backtests: BacktestView[] }> {
  await requireTenant(ctx.db.root, tenantId);
  const rows = await listBacktests(ctx.db.root, tenantId, BACKTEST_LIMITS.listed);
  return { backtests: await Promise.all(rows.map((row) => viewOf(ctx, row))) };
}

/** Cancels a running backtest: its job stops before its next batch; what it replayed stays. */
export async function cancelBacktest(
  ctx: AppContext,
  tenantId: string,
  backtestId: string,
): Promise<BacktestView> {
  await requireBacktest(ctx, tenantId, backtestId);
  const row = await ctx.db.transaction(async (tx) => {
    const current = await lockBacktest(tx, tenantId, backtestId);
    if (!current) throw notFound("backtest");
    if (current.status === "cancelled") return current;
    if (current.status !== "running") {
      throw new AppError("conflict", `the backtest has ended (${current.status})`);
    }
    await updateBacktest(tx, tenantId, backtestId, { status: "cancelled", finished: true });
    return (await findBacktest(tx, tenantId, backtestId)) as BacktestRow;
  });
  return viewOf(ctx, row);
}

export interface CaseResultView {
  caseId: string;
  before: Replayed["before"];
  after: Replayed["after"] & { current?: string[] };
}

/** A page of a backtest's replayed cases (only the changed ones with `changed=true`). */
export async function getBacktestCases(
  ctx: AppContext,
  tenantId: string,
  backtestId: string,
  query: { changed?: boolean; cursor?: string; limit?: number },
): Promise<{ cases: CaseResultView[]; nextCursor: string | null }> {
  await requireBacktest(ctx, tenantId, backtestId);
  const after = query.cursor === undefined ? 0 : Number(query.cursor);
  if (!Number.isSafeInteger(after) || after < 0) {
    throw new AppError("invalid_request", "cursor is not one this endpoint gave", {
      details: [{ path: "cursor", message: "must be the nextCursor of the previous page" }],
    });
  }
  const limit = query.limit ?? BACKTEST_LIMITS.pageDefault;
  const rows = await casesPage(ctx.db.root, tenantId, backtestId, {
    ...(query.changed === undefined ? {} : { changed: query.changed }),
    after,
    limit: limit + 1,
  });
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    cases: page.map(caseView),
    nextCursor: rows.length > limit && last ? String(last.ordinal) : null,
  };
}

function caseView(row: BacktestCaseRow): CaseResultView {
  return {
    caseId: row.case_id,
    before: row.before as unknown as CaseResultView["before"],
    after: row.after as unknown as CaseResultView["after"],
  };
}
