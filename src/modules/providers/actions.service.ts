import type { AppContext } from "../../platform/context.js";
import { isUuid } from "../../platform/crypto.js";
import { AppError, badRequest, notFound } from "../../platform/errors.js";
import { caseExists, findCase } from "../cases/index.js";
import type { Broker, BrokerAction } from "./broker.js";
import { problemsOf } from "./broker-schemas.js";
import { brokerOf } from "./brokers/index.js";
import { requireOpenedConfig } from "./provider-configs.service.js";
import { findRunByWait, listRunsOfCase, type ProviderRunRow } from "./providers.repo.js";
import { caseSubjectOf, openSession, runViewOf } from "./providers.service.js";
import { VendorError } from "./vendor-http.js";

/** Who invokes an action: the partner's key. */
export interface ActionCaller {
  tenantId: string;
  keyId: string;
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

/** A vendor's failure is the partner's 502; the vendor's own words stay in the call record. */
async function vendorAnswer<T>(brokerId: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof VendorError) {
      throw new AppError("provider_failed", `the provider ${brokerId} failed: ${err.message}`, {
        cause: err,
      });
    }
    throw err;
  }
}

function knownBroker(run: ProviderRunRow): Broker {
  const broker = brokerOf(run.broker_id);
  if (!broker) throw new Error(`run ${run.id} names the unknown broker ${run.broker_id}`);
  return broker;
}

/**
 * Endpoint 5: an action on a paused provider node, found by its pending handle. The vendor is
 * called with no transaction open (nothing here locks the case), and the node stays paused.
 */
export async function invokePendingAction(
  ctx: AppContext,
  caller: ActionCaller,
  handle: string,
  actionId: string,
  params: Record<string, unknown>,
): Promise<{ output: Record<string, unknown> }> {
  const run = isUuid(handle) ? await findRunByWait(ctx.db.root, caller.tenantId, handle) : undefined;
  if (!run) throw notFound("pending handle");
  if (run.expires_at && run.expires_at.getTime() <= Date.now()) {
    throw new AppError("gone", `the pending handle expired at ${run.expires_at.toISOString()}`);
  }
  const row = await findCase(ctx.db.root, caller.tenantId, run.case_id);
  const paused =
    run.status === "waiting" &&
    row?.status === "waiting" &&
    row.current_node_id === run.node_id &&
    row.step_seq === run.seq;
  if (!row || !paused) throw new AppError("conflict", `node ${run.node_id} is no longer paused`);
  const broker = knownBroker(run);
  const action = actionOf(broker.pendingActions, actionId, `is not offered by node ${run.node_id}`);
  checkParams(action, params);
  const config = await requireOpenedConfig(ctx, caller.tenantId, broker.id);
  const session = openSession(ctx, caller.tenantId, broker, config, {
    brokerId: broker.id,
    caseId: run.case_id,
    runId: run.id,
    actor: `apikey:${caller.keyId}`,
  });
  const output = await vendorAnswer(broker.id, () =>
    broker.pendingAction(session.call, {
      actionId,
      params,
      run: runViewOf(broker, run),
      case: caseSubjectOf(row),
    }),
  );
  return { output };
}

/** Endpoint 6: the durable actions of every broker that ran on the case, after the decision too. */
export async function listDurableActions(
  ctx: AppContext,
  tenantId: string,
  caseId: string,
): Promise<DurableActionView[]> {
  if (!isUuid(caseId) || !(await caseExists(ctx.db.root, tenantId, caseId))) throw notFound("case");
  const runs = await listRunsOfCase(ctx.db.root, tenantId, caseId);
  const seen = new Set<string>();
  const actions: DurableActionView[] = [];
  for (const run of [...runs].reverse()) {
    if (seen.has(run.broker_id)) continue;
    seen.add(run.broker_id);
    for (const a of brokerOf(run.broker_id)?.durableActions ?? []) {
      actions.push({ brokerId: run.broker_id, id: a.id, label: a.label });
    }
  }
  return actions;
}

/** Endpoint 7: a durable action of a broker that ran on the case. Not idempotent: each call is a vendor call. */
export async function invokeDurableAction(
  ctx: AppContext,
  caller: ActionCaller,
  caseId: string,
  brokerId: string,
  actionId: string,
  params: Record<string, unknown>,
): Promise<{ output: Record<string, unknown> }> {
  const row = isUuid(caseId) ? await findCase(ctx.db.root, caller.tenantId, caseId) : undefined;
  if (!row) throw notFound("case");
  const runs = (await listRunsOfCase(ctx.db.root, caller.tenantId, caseId)).filter(
    (r) => r.broker_id === brokerId,
  );
  const latest = runs[0];
  if (!latest) throw notFound(`broker "${brokerId}" on this case`);
  const broker = knownBroker(latest);
  const action = actionOf(broker.durableActions, actionId, `of broker ${brokerId}`);
  checkParams(action, params);
  const config = await requireOpenedConfig(ctx, caller.tenantId, broker.id);
  const session = openSession(ctx, caller.tenantId, broker, config, {
    brokerId: broker.id,
    caseId,
    runId: latest.id,
    actor: `apikey:${caller.keyId}`,
  });
  const output = await vendorAnswer(broker.id, () =>
    broker.durableAction(session.call, {
      actionId,
      params,
      case: caseSubjectOf(row),
      runs: runs.map((r) => runViewOf(broker, r)),
    }),
  );
  return { output };
}
