import type { AppContext } from "../../platform/context.js";
import { isUuid } from "../../platform/crypto.js";
import { AppError, badRequest, notFound } from "../../platform/errors.js";
import { caseExists, findCase } from "../cases/index.js";
import { insertAudit } from "../users/index.js";
import type { Broker, BrokerAction, CaseSubject } from "./broker.js";
import { problemsOf } from "./broker-schemas.js";
import { brokerOf } from "./brokers/index.js";
import { requireOpenedConfig } from "./provider-configs.service.js";
import { findRunByWait, listRunsOfCase, type ProviderRunRow } from "./providers.repo.js";
import { openSession, runViewOf, type VendorSession } from "./providers.service.js";
import { insertAction, listActionsOfCase } from "./screening.repo.js";
import { type SubjectRow, screenedSubject } from "./screening.service.js";
import { VendorError } from "./vendor-http.js";

/** Who invokes an action: the partner's key (`apikey:<keyId>`) or a console user (`analyst:<userId>`). */
export interface ActionCaller {
  tenantId: string;
  actor: string;
}

export interface DurableActionView {
  brokerId: string;
  id: string;
  label: string;
}

function actionOf(actions: readonly BrokerAction[], actionId: string, what: string): BrokerAction {
  const action = actions.find((a) => a.id === actionId);
  if (!action) throw notFound(`action "${actionId}" ${what}`);
  return action;
}

function checkParams(action: BrokerAction, params: Record<string, unknown>): void {
  const details = problemsOf(action.paramsSchema, params, "params");
  if (details.length > 0) {
    throw badRequest(`invalid params: ${details.map((d) => `${d.path} ${d.message}`).join("; ")}`, details);
  }
}

/**
 * Runs an action's vendor side and records it: its outcome (and its output, when the action keeps
 * it) on the case, with its audit row in the same transaction. A vendor's failure is a 502; the
 * vendor's own words stay in the call record.
 */
async function recordedAction(
  ctx: AppContext,
  caller: ActionCaller,
  scope: { caseId: string; runId: string | null; kind: "pending" | "durable" },
  broker: Broker,
  action: BrokerAction,
  work: () => Promise<Record<string, unknown>>,
): Promise<{ output: Record<string, unknown> }> {
  const record = async (
    outcome: "ok" | "failed",
    output: Record<string, unknown> | null,
    error: string | null,
  ) => {
    const kept = outcome === "ok" && action.keepsOutput === true ? output : null;
    await ctx.db.transaction(async (tx) => {
      await insertAction(tx, caller.tenantId, {
        ...scope,
        brokerId: broker.id,
        action: action.id,
        actor: caller.actor,
        outcome,
        output: kept,
        error,
      });
      await insertAudit(tx, caller, "provider.action", `case:${scope.caseId}`, {
        after: {
          brokerId: broker.id,
          action: action.id,
          kind: scope.kind,
          outcome,
          ...(error ? { error } : {}),
          ...(kept ? { output: kept } : {}),
        },
      });
    });
  };
  let output: Record<string, unknown>;
  try {
    output = await work();
  } catch (err) {
    if (!(err instanceof VendorError) && !(err instanceof AppError)) throw err;
    const failure =
      err instanceof VendorError
        ? new AppError("provider_failed", `the provider ${broker.id} failed: ${err.message}`, { cause: err })
        : err;
    await record("failed", null, failure.message);
    throw failure;
  }
  await record("ok", output, null);
  return { output };
}

function knownBroker(run: ProviderRunRow): Broker {
  const broker = brokerOf(run.broker_id);
  if (!broker) throw new Error(`run ${run.id} names the unknown broker ${run.broker_id}`);
  return broker;
}

/** An action asked for by its id, with its params (checked against the action's schema). */
export interface ActionCall {
  actionId: string;
  params: Record<string, unknown>;
}

/** The run paused on a pending handle, with its case: 404 unknown, 410 expired, 409 no longer paused. */
async function pausedRun(ctx: AppContext, tenantId: string, handle: string) {
  const run = isUuid(handle) ? await findRunByWait(ctx.db.root, tenantId, handle) : undefined;
  if (!run) throw notFound("pending handle");
  if (run.expires_at && run.expires_at.getTime() <= Date.now()) {
    throw new AppError("gone", `the pending handle expired at ${run.expires_at.toISOString()}`);
  }
  const row = await findCase(ctx.db.root, tenantId, run.case_id);
  const paused =
    run.status === "waiting" &&
    row?.status === "waiting" &&
    row.current_node_id === run.node_id &&
    row.step_seq === run.seq;
  if (!row || !paused) throw new AppError("conflict", `node ${run.node_id} is no longer paused`);
  return { run, row };
}

/**
 * Calls an action of a broker on a case (its params already checked): with the tenant's
 * configuration, in a session that records its vendor calls under the run, on the case's
 * screened subject, and recorded itself (see recordedAction).
 */
async function callAction(
  ctx: AppContext,
  caller: ActionCaller,
  broker: Broker,
  action: BrokerAction,
  on: { row: SubjectRow; caseId: string; runId: string; kind: "pending" | "durable" },
  work: (vendor: VendorSession["call"], kase: CaseSubject) => Promise<Record<string, unknown>>,
): Promise<{ output: Record<string, unknown> }> {
  const config = await requireOpenedConfig(ctx, caller.tenantId, broker.id);
  const { caseId, runId, kind } = on;
  const session = openSession(ctx, caller.tenantId, broker, config, {
    brokerId: broker.id,
    caseId,
    runId,
    actor: caller.actor,
  });
  const kase = await screenedSubject(ctx.db.root, caller.tenantId, broker, on.row);
  return recordedAction(ctx, caller, { caseId, runId, kind }, broker, action, () => work(session.call, kase));
}

/**
 * Endpoint 5: an action on a paused provider node, found by its pending handle. The vendor is
 * called with no transaction open (nothing here locks the case), and the node stays paused.
 */
export async function invokePendingAction(
  ctx: AppContext,
  caller: ActionCaller,
  handle: string,
  call: ActionCall,
): Promise<{ output: Record<string, unknown> }> {
  const { run, row } = await pausedRun(ctx, caller.tenantId, handle);
  const broker = knownBroker(run);
  const action = actionOf(broker.pendingActions, call.actionId, `is not offered by node ${run.node_id}`);
  checkParams(action, call.params);
  const on = { row, caseId: run.case_id, runId: run.id, kind: "pending" as const };
  return callAction(ctx, caller, broker, action, on, (vendor, kase) =>
    broker.pendingAction(vendor, { ...call, run: runViewOf(broker, run), case: kase }),
  );
}

/** Endpoint 6: the durable actions of every broker that ran on the case, after the decision too. */
export async function listDurableActions(
  ctx: AppContext,
  tenantId: string,
  caseId: string,
): Promise<DurableActionView[]> {
  if (!isUuid(caseId) || !(await caseExists(ctx.db.root, tenantId, caseId))) throw notFound("case");
  const runs = await listRunsOfCase(ctx.db.root, tenantId, caseId);
  return durableActionsOf(runs).map(({ brokerId, action }) => ({
    brokerId,
    id: action.id,
    label: action.label,
  }));
}

/** The durable actions of each broker that ran (runs newest first), in the order the brokers first ran. */
function durableActionsOf(
  runs: readonly ProviderRunRow[],
): Array<{ brokerId: string; action: BrokerAction }> {
  const brokers = [...new Set([...runs].reverse().map((r) => r.broker_id))];
  return brokers.flatMap((brokerId) =>
    (brokerOf(brokerId)?.durableActions ?? []).map((action) => ({ brokerId, action })),
  );
}

/** Endpoint 7: a durable action of a broker that ran on the case. Not idempotent: each call is a vendor call. */
export async function invokeDurableAction(
  ctx: AppContext,
  caller: ActionCaller,
  caseId: string,
  brokerId: string,
  call: ActionCall,
): Promise<{ output: Record<string, unknown> }> {
  const row = isUuid(caseId) ? await findCase(ctx.db.root, caller.tenantId, caseId) : undefined;
  if (!row) throw notFound("case");
  const runs = (await listRunsOfCase(ctx.db.root, caller.tenantId, caseId)).filter(
    (r) => r.broker_id === brokerId,
  );
  const latest = runs[0];
  if (!latest) throw notFound(`broker "${brokerId}" on this case`);
  const broker = knownBroker(latest);
  const action = actionOf(broker.durableActions, call.actionId, `of broker ${brokerId}`);
  checkParams(action, call.params);
  const on = { row, caseId, runId: latest.id, kind: "durable" as const };
  return callAction(ctx, caller, broker, action, on, (vendor, kase) =>
    broker.durableAction(vendor, { ...call, case: kase, runs: runs.map((r) => runViewOf(broker, r)) }),
  );
}

/** An action the console offers on a case: a paused node's (with its handle) or a durable one. */
export interface OfferedAction {
  kind: "pending" | "durable";
  brokerId: string;
  id: string;
  label: string;
  paramsSchema: Record<string, unknown>;
  /** A pending action's handle (the paused node's wait), and the node. */
  handle?: string;
  nodeId?: string;
}

/** An action run on the case, as the console lists it (its output is never shown again). */
export interface ActionRunView {
  brokerId: string;
  action: string;
  label: string;
  kind: "pending" | "durable";
  actor: string;
  outcome: "ok" | "failed";
  error: string | null;
  at: string;
}

/**
 * What the case page offers and shows of its providers: the actions of the nodes paused on a
 * vendor now, the durable actions of the brokers that ran, and the actions run so far.
 */
export async function getCaseActions(
  ctx: AppContext,
  tenantId: string,
  caseId: string,
): Promise<{ offered: OfferedAction[]; recent: ActionRunView[] }> {
  if (!isUuid(caseId)) throw notFound("case");
  const [row, runs, recent] = await Promise.all([
    findCase(ctx.db.root, tenantId, caseId),
    listRunsOfCase(ctx.db.root, tenantId, caseId),
    listActionsOfCase(ctx.db.root, tenantId, caseId, 20),
  ]);
  if (!row) throw notFound("case");
  const offered: OfferedAction[] = [];
  const now = Date.now();
  for (const run of runs) {
    const broker = brokerOf(run.broker_id);
    const paused =
      run.status === "waiting" &&
      run.wait_id !== null &&
      (run.expires_at === null || run.expires_at.getTime() > now) &&
      row.status === "waiting" &&
      row.current_node_id === run.node_id &&
      row.step_seq === run.seq;
    if (!broker || !paused) continue;
    for (const a of broker.pendingActions) {
      offered.push({
        kind: "pending",
        brokerId: broker.id,
        ...a,
        handle: run.wait_id ?? "",
        nodeId: run.node_id,
      });
    }
  }
  for (const { brokerId, action } of durableActionsOf(runs))
    offered.push({ kind: "durable", brokerId, ...action });
  return {
    offered,
    recent: recent.map((r) => {
      const broker = brokerOf(r.broker_id);
      const all = [...(broker?.pendingActions ?? []), ...(broker?.durableActions ?? [])];
      return {
        brokerId: r.broker_id,
        action: r.action,
        label: all.find((a) => a.id === r.action)?.label ?? r.action,
        kind: r.kind,
        actor: r.actor,
        outcome: r.outcome,
        error: r.error,
        at: r.created_at.toISOString(),
      };
    }),
  };
}
