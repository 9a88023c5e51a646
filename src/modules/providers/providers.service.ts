import { createHash } from "node:crypto";
import type { AppContext } from "../../platform/context.js";
import { providerCalls } from "../../platform/metrics.js";
import type { Broker, BrokerCall, CaseSubject, RunView } from "./broker.js";
import type { OpenedConfig } from "./provider-configs.service.js";
import { type CallScope, insertCall, type ProviderRunRow } from "./providers.repo.js";
import type { Verdict } from "./providers.tables.js";
import { type CallRecord, VendorClient } from "./vendor-http.js";

/**
 * What every broker operation shares: a vendor client for the tenant's configuration, whose
 * every attempt is recorded (in its own statement, as soon as it is made, so that a crash after a
 * vendor call still leaves its record) and collected for the trace.
 */
export interface VendorSession<Credentials = unknown> {
  call: BrokerCall<Credentials>;
  /** The calls made so far through this session. */
  calls: CallRecord[];
}

export function openSession(
  ctx: AppContext,
  tenantId: string,
  broker: Broker,
  config: OpenedConfig,
  scope: CallScope,
): VendorSession {
  const calls: CallRecord[] = [];
  const vendor = new VendorClient({
    baseUrl: config.baseUrl,
    timeoutMs: config.timeoutMs,
    allowPrivateTargets: ctx.config.allowPrivateTargets,
    signer: broker.signer(config.credentials),
    async onCall(record) {
      calls.push(record);
      providerCalls.observe({ broker: scope.brokerId, outcome: record.outcome }, record.durationMs / 1000);
      await insertCall(ctx.db.root, tenantId, scope, record);
      const fields = { tenantId, caseId: scope.caseId, brokerId: scope.brokerId, ...record };
      if (record.outcome === "ok") ctx.log.debug(fields, "vendor call");
      else ctx.log.warn(fields, "vendor call failed");
    },
  });
  return { call: { vendor, credentials: config.credentials }, calls };
}

/** A run's id, the same for every attempt at one step, so that the calls of each attempt share it. */
export function runIdOf(caseId: string, seq: number): string {
  const hex = createHash("sha256").update(`provider-run:${caseId}:${seq}`).digest("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

export function runViewOf(broker: Broker, run: ProviderRunRow): RunView<unknown> {
  return {
    runId: run.id,
    nodeId: run.node_id,
    subjectRef: run.subject_ref,
    state: run.state,
    config: broker.parseConfig(run.config),
    output: run.output,
  };
}

const NONE: ReadonlyMap<string, Verdict> = new Map();

/** The case as brokers see it; the hits' `verdicts` for a screening broker (see `screenedSubject`). */
export function caseSubjectOf(
  row: {
    id: string;
    type: string;
    subject: Record<string, unknown>;
    external_customer_id: string | null;
  },
  verdicts: ReadonlyMap<string, Verdict> = NONE,
): CaseSubject {
  return {
    caseId: row.id,
    caseType: row.type,
    subject: row.subject,
    externalCustomerId: row.external_customer_id,
    verdicts,
  };
}

/** A call as the trace shows it: what, how it went, how long; never bodies. */
export function traceCall(record: CallRecord & { actor?: string }) {
  return {
    action: record.action,
    attempt: record.attempt,
    httpStatus: record.httpStatus,
    durationMs: record.durationMs,
    outcome: record.outcome,
    ...(record.actor ? { actor: record.actor } : {}),
    ...(record.error ? { error: record.error } : {}),
  };
}
