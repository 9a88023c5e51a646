import type { VNode } from "preact";
import type { AppContext } from "../../platform/context.js";
import { getApiKeys } from "../auth/index.js";
import {
  type CaseRecordView,
  type CommentView,
  findCase,
  getCase,
  getComments,
  getReviewSlas,
  mayWork,
} from "../cases/index.js";
import { listPausedNodes, type PausedNode } from "../engine/index.js";
import { getTagOptions } from "../tags/index.js";
import { getUsers } from "../users/index.js";
import { type DeliveryView, getDeliveries } from "../webhooks/index.js";
import type { JsonObject } from "../workflows/index.js";
import { describeTrace, getVersion } from "../workflows/index.js";
import type { CaseView } from "./console.seam.js";
import type { PageContext } from "./views/layout.js";

/** One step of the path a case took, with its node type's account of why it went where it went. */
export interface TraceStep {
  seq: number;
  nodeId: string;
  nodeType: string;
  status: string;
  startedAt: string;
  output: unknown;
  next: string | null;
  /** "rule 2 (payload.amount > 1000) held", "+30 points", "band 2: decided declined"… */
  facts: string[];
}

export interface CaseScreen {
  record: CaseRecordView;
  trace: TraceStep[];
  paused: PausedNode[];
  deliveries: DeliveryView[];
  /** Enabled tag options the case does not carry yet. */
  addableTags: string[];
  /** `analyst:<id>` and `apikey:<id>` to the names people know them by. */
  names: Map<string, string>;
  /** What other features show of the case in the side column (its entities and related cases), in their order. */
  featurePanels: VNode[];
  /** What other features show of the case in the main column (its screening hits), in their order. */
  featureMainPanels: VNode[];
  /** The analysts' work on it: its owner, its review deadline, its internal comments. */
  work: CaseWork;
}

export interface CaseWork {
  assigneeId: string | null;
  dueAt: string | null;
  overdue: boolean;
  comments: CommentView[];
  /** The tenant's users (an admin assigns to them). */
  users: Array<{ userId: string; name: string }>;
}

/** Who the tenant's actors are, by their labels: users by name, keys by their name. */
export async function actorNames(ctx: AppContext, tenantId: string): Promise<Map<string, string>> {
  const [users, keys] = await Promise.all([getUsers(ctx, tenantId), getApiKeys(ctx, tenantId)]);
  return new Map([
    ...users.map((u) => [`analyst:${u.userId}`, u.name] as const),
    ...keys.map((k) => [`apikey:${k.keyId}`, `API key “${k.name}”`] as const),
    ["operator", "Operator (API, CLI)"],
  ]);
}

/**
 * The case's trace (the engine's steps with what other features noted on them), each step told in
 * the words of its node type, quoting the version's rules; actors by their names.
 */
async function traceOf(
  ctx: AppContext,
  record: CaseRecordView,
  tenantId: string,
  names: ReadonlyMap<string, string>,
): Promise<TraceStep[]> {
  const [trace, version] = await Promise.all([
    ctx.cases.parts.trace(ctx.db.root, tenantId, record.caseId),
    getVersion(ctx, tenantId, record.workflowId, record.workflowVersion).catch(() => undefined),
  ]);
  const named = (line: string) =>
    line.replace(/\b(?:analyst:[0-9a-f-]{36}|apikey:[A-Za-z0-9_-]+)/g, (actor) => names.get(actor) ?? actor);
  return trace.map((entry) => ({
    seq: entry.seq,
    nodeId: entry.nodeId,
    nodeType: entry.nodeType,
    status: entry.status,
    startedAt: entry.startedAt,
    output: entry.output,
    next: entry.next,
    facts: describeTrace(ctx.nodeTypes, [entry], version?.definition as JsonObject | undefined)
      .slice(1)
      .map((line) => named(line.trim())),
  }));
}

/** The panels the features draw on the case page, in their order (none drawn as null). */
async function featurePanelsOf(
  ctx: AppContext,
  tenantId: string,
  caseId: string,
  view: CaseView,
): Promise<{ side: VNode[]; main: VNode[] }> {
  const drawn = (panels: Array<VNode | null>) => panels.filter((p): p is VNode => p !== null);
  const [side, main] = await Promise.all([
    Promise.all(ctx.console.sections.map((s) => s.casePanels?.(ctx, tenantId, caseId, view) ?? null)),
    Promise.all(ctx.console.sections.map((s) => s.caseMainPanels?.(ctx, tenantId, caseId, view) ?? null)),
  ]);
  return { side: drawn(side), main: drawn(main) };
}

/** Everything the case page shows, read through the services the APIs use; 404 for another tenant's case. */
export async function caseScreen(
  ctx: AppContext,
  tenantId: string,
  caseId: string,
  page: PageContext,
): Promise<CaseScreen> {
  const record = await getCase(ctx, tenantId, caseId);
  const [names, row] = await Promise.all([
    actorNames(ctx, tenantId),
    findCase(ctx.db.root, tenantId, record.caseId),
  ]);
  const session = page.session;
  const worker = session && { userId: session.userId, admin: session.role === "admin" };
  const view = {
    page,
    names,
    dryRun: record.dryRun,
    mayWork: worker ? mayWork(worker, row?.assignee_id ?? null) : false,
  };
  const [trace, paused, deliveries, options, panels, comments, slas, users] = await Promise.all([
    traceOf(ctx, record, tenantId, names),
    listPausedNodes(ctx, tenantId, caseId),
    getDeliveries(ctx, tenantId, { caseId, limit: 25 }),
    getTagOptions(ctx, tenantId),
    featurePanelsOf(ctx, tenantId, record.caseId, view),
    getComments(ctx, tenantId, record.caseId),
    getReviewSlas(ctx, tenantId),
    getUsers(ctx, tenantId),
  ]);
  const hours = slas.get(record.type);
  const due =
    hours !== undefined && (record.status === "in_review" || record.status === "waiting")
      ? new Date(new Date(record.createdAt).getTime() + hours * 3_600_000)
      : null;
  const carried = new Set(record.tags.map((t) => t.tag));
  return {
    record,
    trace,
    paused,
    deliveries: deliveries.deliveries,
    addableTags: options.filter((o) => o.enabled && !carried.has(o.tag)).map((o) => o.tag),
    names,
    featurePanels: panels.side,
    featureMainPanels: panels.main,
    work: {
      assigneeId: row?.assignee_id ?? null,
      dueAt: due?.toISOString() ?? null,
      overdue: due !== null && due.getTime() < Date.now(),
      comments,
      users: users.map((u) => ({ userId: u.userId, name: u.name })),
    },
  };
}
