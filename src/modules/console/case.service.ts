import type { AppContext } from "../../platform/context.js";
import { getApiKeys } from "../auth/api-keys.service.js";
import { type CaseRecordView, getCase } from "../cases/cases.service.js";
import { listPausedNodes, type PausedNode } from "../engine/callbacks.service.js";
import { listSteps } from "../engine/engine.repo.js";
import { getTagOptions } from "../tags/tags.service.js";
import { getUsers } from "../users/index.js";
import { type DeliveryView, getDeliveries } from "../webhooks/deliveries.service.js";

/** One step of the path a case took through its workflow, with why it went where it went. */
export interface TraceStep {
  seq: number;
  nodeId: string;
  nodeType: string;
  status: string;
  startedAt: string | null;
  finishedAt: string | null;
  output: unknown;
  next: string | null;
  error?: unknown;
  matched?: number | "default";
  score?: number;
  contributions?: Array<{ index: number; points: number }>;
  band?: number;
  brokerId?: string;
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
}

/** Who the tenant's actors are, by their labels: users by name, keys by their name. */
export async function actorNames(ctx: AppContext, tenantId: string): Promise<Map<string, string>> {
  const [users, keys] = await Promise.all([getUsers(ctx, tenantId), getApiKeys(ctx, tenantId)]);
  return new Map([
    ...users.map((u) => [`analyst:${u.userId}`, u.name] as const),
    ...keys.map((k) => [`apikey:${k.keyId}`, `API key “${k.name}”`] as const),
  ]);
}

async function traceOf(ctx: AppContext, tenantId: string, caseId: string): Promise<TraceStep[]> {
  const steps = await listSteps(ctx.db.root, tenantId, caseId);
  return steps.map((s) => ({
    seq: s.seq,
    nodeId: s.node_id,
    nodeType: s.node_type,
    status: s.status,
    startedAt: s.created_at.toISOString(),
    finishedAt: s.finished_at?.toISOString() ?? null,
    output: s.output,
    next: s.next_node_id,
    ...(s.error ? { error: s.error } : {}),
  }));
}

/** Everything the case page shows, read through the services the APIs use; 404 for another tenant's case. */
export async function caseScreen(ctx: AppContext, tenantId: string, caseId: string): Promise<CaseScreen> {
  const record = await getCase(ctx, tenantId, caseId);
  const [trace, paused, deliveries, options, names] = await Promise.all([
    traceOf(ctx, tenantId, caseId),
    listPausedNodes(ctx, tenantId, caseId),
    getDeliveries(ctx, tenantId, { caseId, limit: 25 }),
    getTagOptions(ctx, tenantId),
    actorNames(ctx, tenantId),
  ]);
  const carried = new Set(record.tags.map((t) => t.tag));
  return {
    record,
    trace,
    paused,
    deliveries: deliveries.deliveries,
    addableTags: options.filter((o) => o.enabled && !carried.has(o.tag)).map((o) => o.tag),
    names,
  };
}
