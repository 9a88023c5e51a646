import { sql } from "kysely";
import {
  deleteRows,
  type Executor,
  findRow,
  findRows,
  type Row,
  updateRows,
  upsertRow,
} from "../../platform/db/index.js";
import type { RunStatus } from "./providers.tables.js";
import type { CallRecord } from "./vendor-http.js";

export type ProviderConfigRow = Row<"provider_configs">;
export type ProviderRunRow = Row<"provider_runs">;
export type ProviderCallRow = Row<"provider_calls">;
export type ProviderEventRow = Row<"provider_events">;

export interface ProviderConfigValues {
  baseUrl: string;
  credentialsSealed: string;
  webhookSecretSealed: string | null;
  /** Used only when the configuration is new: a configuration keeps its inbound URL. */
  inboundToken: string;
  timeoutMs: number;
}

export function findProviderConfig(db: Executor, tenantId: string, brokerId: string) {
  return findRow(db, "provider_configs", { tenant_id: tenantId, broker_id: brokerId });
}

/** The configuration an inbound webhook URL names; the token alone identifies the tenant. */
export function findProviderConfigByInboundToken(db: Executor, inboundToken: string) {
  return findRow(db, "provider_configs", { inbound_token: inboundToken });
}

export function upsertProviderConfig(
  db: Executor,
  tenantId: string,
  brokerId: string,
  values: ProviderConfigValues,
): Promise<ProviderConfigRow> {
  const columns = {
    base_url: values.baseUrl,
    credentials_sealed: values.credentialsSealed,
    webhook_secret_sealed: values.webhookSecretSealed,
    timeout_ms: values.timeoutMs,
  };
  const key = { tenant_id: tenantId, broker_id: brokerId };
  return upsertRow(db, "provider_configs", key, columns, {
    insertOnly: { inbound_token: values.inboundToken },
  });
}

export function listProviderConfigs(db: Executor, tenantId: string): Promise<ProviderConfigRow[]> {
  return findRows(db, "provider_configs", { tenant_id: tenantId }, ["broker_id"]);
}

/** The brokers among `brokerIds` the tenant has configured. */
export async function configuredBrokers(
  db: Executor,
  tenantId: string,
  brokerIds: string[],
): Promise<Set<string>> {
  if (brokerIds.length === 0) return new Set();
  const rows = await db
    .selectFrom("provider_configs")
    .select("broker_id")
    .where("tenant_id", "=", tenantId)
    .where("broker_id", "in", brokerIds)
    .execute();
  return new Set(rows.map((r) => r.broker_id));
}

export async function deleteProviderConfig(
  db: Executor,
  tenantId: string,
  brokerId: string,
): Promise<boolean> {
  return (await deleteRows(db, "provider_configs", { tenant_id: tenantId, broker_id: brokerId })) > 0;
}

// ---------------------------------------------------------------------------------------------
// Runs

export interface NewRun {
  id: string;
  caseId: string;
  nodeId: string;
  seq: number;
  brokerId: string;
  status: RunStatus;
  waitId: string | null;
  expiresAt: Date | null;
  subjectRef: string | null;
  config: Record<string, unknown>;
  state: Record<string, unknown>;
  output: Record<string, unknown> | null;
  error: string | null;
}

export async function insertRun(db: Executor, tenantId: string, run: NewRun): Promise<void> {
  await db
    .insertInto("provider_runs")
    .values({
      id: run.id,
      tenant_id: tenantId,
      case_id: run.caseId,
      node_id: run.nodeId,
      seq: run.seq,
      broker_id: run.brokerId,
      status: run.status,
      wait_id: run.waitId,
      expires_at: run.expiresAt,
      subject_ref: run.subjectRef,
      config: JSON.stringify(run.config),
      state: JSON.stringify(run.state),
      output: run.output === null ? null : JSON.stringify(run.output),
      error: run.error,
    })
    .execute();
}

/** The run paused on a wait: the pending handle of endpoint 5 is the wait's id. */
export function findRunByWait(db: Executor, tenantId: string, waitId: string) {
  return findRow(db, "provider_runs", { tenant_id: tenantId, wait_id: waitId });
}

export function findRun(db: Executor, tenantId: string, runId: string) {
  return findRow(db, "provider_runs", { tenant_id: tenantId, id: runId });
}

/** The runs of a case, newest first. */
export function listRunsOfCase(db: Executor, tenantId: string, caseId: string): Promise<ProviderRunRow[]> {
  return findRows(db, "provider_runs", { tenant_id: tenantId, case_id: caseId }, ["seq desc"]);
}

/** The runs of the tenant waiting on this vendor subject (a Sumsub applicant), in case lock order. */
export function listWaitingRunsOfSubject(
  db: Executor,
  tenantId: string,
  brokerId: string,
  subjectRef: string,
): Promise<ProviderRunRow[]> {
  const match = {
    tenant_id: tenantId,
    broker_id: brokerId,
    subject_ref: subjectRef,
    status: "waiting",
  } as const;
  return findRows(db, "provider_runs", match, ["case_id"]);
}

export interface RunPatch {
  status?: RunStatus;
  subjectRef?: string | null;
  state?: Record<string, unknown>;
  output?: Record<string, unknown> | null;
  error?: string | null;
  lastEventAt?: Date | null;
}

export async function updateRun(
  db: Executor,
  tenantId: string,
  runId: string,
  patch: RunPatch,
): Promise<void> {
  await db
    .updateTable("provider_runs")
    .set({
      ...(patch.status === undefined ? {} : { status: patch.status }),
      ...(patch.subjectRef === undefined ? {} : { subject_ref: patch.subjectRef }),
      ...(patch.state === undefined ? {} : { state: JSON.stringify(patch.state) }),
      ...(patch.output === undefined
        ? {}
        : { output: patch.output === null ? null : JSON.stringify(patch.output) }),
      ...(patch.error === undefined ? {} : { error: patch.error }),
      ...(patch.lastEventAt === undefined ? {} : { last_event_at: patch.lastEventAt }),
      updated_at: sql<Date>`now()`,
    })
    .where("tenant_id", "=", tenantId)
    .where("id", "=", runId)
    .execute();
}

// ---------------------------------------------------------------------------------------------
// Vendor calls

export interface CallScope {
  brokerId: string;
  caseId: string | null;
  runId: string | null;
  actor: string;
}

export async function insertCall(
  db: Executor,
  tenantId: string,
  scope: CallScope,
  record: CallRecord,
): Promise<void> {
  await db
    .insertInto("provider_calls")
    .values({
      tenant_id: tenantId,
      broker_id: scope.brokerId,
      case_id: scope.caseId,
      run_id: scope.runId,
      action: record.action,
      actor: scope.actor,
      attempt: record.attempt,
      http_status: record.httpStatus,
      duration_ms: record.durationMs,
      outcome: record.outcome,
      error: record.error,
    })
    .execute();
}

export function listCallsOfRun(db: Executor, tenantId: string, runId: string): Promise<ProviderCallRow[]> {
  return findRows(db, "provider_calls", { tenant_id: tenantId, run_id: runId }, ["id"]);
}

// ---------------------------------------------------------------------------------------------
// Inbound events

export interface NewEvent {
  id: string;
  brokerId: string;
  digest: string;
  eventType: string;
  subjectRef: string | null;
  occurredAt: Date | null;
  body: Record<string, unknown>;
}

/** Stores an event unless the same body was stored before; true when it is new. */
export async function insertEventOnce(db: Executor, tenantId: string, event: NewEvent): Promise<boolean> {
  const row = await db
    .insertInto("provider_events")
    .values({
      id: event.id,
      tenant_id: tenantId,
      broker_id: event.brokerId,
      digest: event.digest,
      event_type: event.eventType,
      subject_ref: event.subjectRef,
      occurred_at: event.occurredAt,
      body: JSON.stringify(event.body),
    })
    .onConflict((oc) => oc.columns(["tenant_id", "broker_id", "digest"]).doNothing())
    .returning("id")
    .executeTakeFirst();
  return row !== undefined;
}

export function findEvent(db: Executor, tenantId: string, eventId: string) {
  return findRow(db, "provider_events", { tenant_id: tenantId, id: eventId });
}

export async function markEventHandled(
  db: Executor,
  tenantId: string,
  eventId: string,
  outcome: string,
): Promise<void> {
  await updateRows(
    db,
    "provider_events",
    { tenant_id: tenantId, id: eventId },
    { handled_at: sql<Date>`now()`, outcome },
  );
}

/** The vendor calls made for a case, oldest first. */
export function listCallsOfCase(db: Executor, tenantId: string, caseId: string): Promise<ProviderCallRow[]> {
  return findRows(db, "provider_calls", { tenant_id: tenantId, case_id: caseId }, ["id"]);
}
