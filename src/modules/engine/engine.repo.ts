import type { QueryCreator } from "kysely";
import { type Selectable, sql } from "kysely";
import type { Database, Executor } from "../../platform/db/index.js";
import { insertJobs, type JobSpec, notifyJobs } from "../../platform/jobs.js";
import type { CaseWaitsTable } from "./engine.tables.js";

export type WaitRow = Selectable<CaseWaitsTable>;
export type WaitKind = "callback" | "rfi" | "provider";
export type WaitResolution = "callback" | "timeout" | "answered" | "expired" | "cancelled" | "closed";

export interface NewStep {
  tenantId: string;
  caseId: string;
  seq: number;
  nodeId: string;
  nodeType: string;
  status: "completed" | "waiting" | "failed";
  output: unknown;
  nextNodeId: string | null;
  error: Record<string, unknown> | null;
}

function stepValues(step: NewStep) {
  return {
    tenant_id: step.tenantId,
    case_id: step.caseId,
    seq: step.seq,
    node_id: step.nodeId,
    node_type: step.nodeType,
    status: step.status,
    output: step.output === undefined ? null : JSON.stringify(step.output),
    next_node_id: step.nextNodeId,
    error: step.error === null ? null : JSON.stringify(step.error),
    finished_at: step.status === "waiting" ? null : new Date(),
  };
}

/** The workflow columns of a case, as a step leaves them. */
export interface CaseState {
  status: string;
  stepSeq: number;
  currentNodeId: string | null;
  nodeOutputs: Record<string, unknown>;
  decision: unknown;
  decisionHistory: unknown[];
  workflowResult: unknown;
  error: unknown;
}

/** What one step decided: written together with the other steps of its batch by `writeSteps`. */
export interface StepWrite {
  step: { mode: "insert" | "complete"; record: NewStep };
  state: CaseState;
  jobs: JobSpec<unknown>[];
  waits: NewWait[];
}

const jsonOrNull = (value: unknown) => (value === null || value === undefined ? null : JSON.stringify(value));

/**
 * Writes the steps of a batch in one statement: the step rows (new, or the completion of steps
 * that paused), the cases' new states, the waits they open, and the jobs that follow, with the
 * NOTIFY that wakes the workers on commit for jobs not written already claimed. One round trip
 * for the batch instead of three or four per step: this is the engine's hot path. Returns the id
 * of each job written, by job key.
 */
export async function writeSteps(tx: Executor, writes: StepWrite[]): Promise<Map<string, number>> {
  if (writes.length === 0) return new Map();
  const now = new Date();
  const parts = [];
  const inserts = writes.filter((w) => w.step.mode === "insert").map((w) => stepValues(w.step.record));
  if (inserts.length > 0) parts.push(sql`step_insert AS (${tx.insertInto("case_steps").values(inserts)})`);
  const completes = writes.filter((w) => w.step.mode === "complete").map((w) => stepValues(w.step.record));
  if (completes.length > 0) {
    const rows = sql.join(
      completes.map(
        (c) =>
          sql`(${c.tenant_id}::uuid, ${c.case_id}::uuid, ${c.seq}::int, ${c.status}, ${c.output ?? "null"}::jsonb, ${c.next_node_id}::text, ${c.error}::jsonb, ${c.finished_at}::timestamptz)`,
      ),
    );
    parts.push(sql`step_complete AS (
      UPDATE case_steps s
      SET status = v.status, output = v.output, next_node_id = v.next_node_id, error = v.error,
          finished_at = v.finished_at
      FROM (VALUES ${rows}) AS v(tenant_id, case_id, seq, status, output, next_node_id, error, finished_at)
      WHERE s.tenant_id = v.tenant_id AND s.case_id = v.case_id AND s.seq = v.seq
    )`);
  }
  const states = sql.join(
    writes.map(({ step: { record: r }, state: c }) => {
      const values = [
        sql`${r.caseId}::uuid`,
        sql`${r.tenantId}::uuid`,
        sql`${c.status}::text`,
        sql`${c.stepSeq}::int`,
        sql`${c.currentNodeId}::text`,
        sql`${JSON.stringify(c.nodeOutputs)}::jsonb`,
        sql`${jsonOrNull(c.decision)}::jsonb`,
        sql`${JSON.stringify(c.decisionHistory)}::jsonb`,
        sql`${jsonOrNull(c.workflowResult)}::json`,
        sql`${jsonOrNull(c.error)}::jsonb`,
      ];
      return sql`(${sql.join(values)})`;
    }),
  );
  parts.push(sql`kase AS (
    UPDATE cases c
    SET status = v.status, step_seq = v.step_seq, current_node_id = v.current_node_id,
        node_outputs = v.node_outputs, decision = v.decision, decision_history = v.decision_history,
        workflow_result = v.workflow_result, error = v.error, updated_at = ${now}::timestamptz
    FROM (VALUES ${states}) AS v(id, tenant_id, status, step_seq, current_node_id, node_outputs, decision,
                                 decision_history, workflow_result, error)
    WHERE c.id = v.id AND c.tenant_id = v.tenant_id
  )`);
  const waits = writes.flatMap((w) => w.waits).map(waitValues);
  if (waits.length > 0) parts.push(sql`wait AS (${tx.insertInto("case_waits").values(waits)})`);
  const jobs = writes.flatMap((w) => w.jobs);
  if (jobs.length === 0) {
    await sql`WITH ${sql.join(parts)} SELECT 1`.execute(tx);
    return new Map();
  }
  parts.push(sql`job AS (${insertJobs(tx as unknown as QueryCreator<Database>, jobs).returning("job_key")})`);
  const { rows } = await sql<{ id: number; job_key: string | null }>`
    WITH ${sql.join(parts)}
    SELECT job.id, job.job_key, CASE WHEN job.locked_by IS NULL THEN ${notifyJobs} END AS notified
    FROM job`.execute(tx);
  return new Map(rows.flatMap((r) => (r.job_key === null ? [] : [[r.job_key, r.id] as const])));
}

export function listSteps(db: Executor, tenantId: string, caseId: string) {
  return db
    .selectFrom("case_steps")
    .selectAll()
    .where("tenant_id", "=", tenantId)
    .where("case_id", "=", caseId)
    .orderBy("seq")
    .execute();
}

export interface NewWait {
  id: string;
  tenantId: string;
  caseId: string;
  seq: number;
  nodeId: string;
  kind: WaitKind;
  callbackRef: string | null;
  rfiId: string | null;
  providerId: string | null;
  expiresAt: Date | null;
}

function waitValues(wait: NewWait) {
  return {
    id: wait.id,
    tenant_id: wait.tenantId,
    case_id: wait.caseId,
    seq: wait.seq,
    node_id: wait.nodeId,
    kind: wait.kind,
    callback_ref: wait.callbackRef,
    rfi_id: wait.rfiId,
    provider_id: wait.providerId,
    expires_at: wait.expiresAt,
  };
}

export function findWait(tx: Executor, tenantId: string, waitId: string): Promise<WaitRow | undefined> {
  return tx
    .selectFrom("case_waits")
    .selectAll()
    .where("tenant_id", "=", tenantId)
    .where("id", "=", waitId)
    .executeTakeFirst();
}

export function findWaitByCallbackRef(
  tx: Executor,
  tenantId: string,
  caseId: string,
  callbackRef: string,
): Promise<WaitRow | undefined> {
  return tx
    .selectFrom("case_waits")
    .selectAll()
    .where("tenant_id", "=", tenantId)
    .where("case_id", "=", caseId)
    .where("callback_ref", "=", callbackRef)
    .executeTakeFirst();
}

export function findOpenWaitForRfi(
  tx: Executor,
  tenantId: string,
  caseId: string,
  rfiId: string,
): Promise<WaitRow | undefined> {
  return tx
    .selectFrom("case_waits")
    .selectAll()
    .where("tenant_id", "=", tenantId)
    .where("case_id", "=", caseId)
    .where("rfi_id", "=", rfiId)
    .where("resolved_at", "is", null)
    .executeTakeFirst();
}

export function listOpenWaits(
  db: Executor,
  tenantId: string,
  caseId: string,
  kinds: WaitKind[],
): Promise<WaitRow[]> {
  return db
    .selectFrom("case_waits")
    .selectAll()
    .where("tenant_id", "=", tenantId)
    .where("case_id", "=", caseId)
    .where("kind", "in", kinds)
    .where("resolved_at", "is", null)
    .orderBy("created_at")
    .execute();
}

/** Resolves an open wait; false when it was already resolved (the other resolution won). */
export async function resolveWait(
  tx: Executor,
  tenantId: string,
  waitId: string,
  resolution: WaitResolution,
): Promise<boolean> {
  const result = await tx
    .updateTable("case_waits")
    .set({ resolved_at: sql<Date>`now()`, resolution })
    .where("tenant_id", "=", tenantId)
    .where("id", "=", waitId)
    .where("resolved_at", "is", null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function resolveOpenWaitsOfCase(
  tx: Executor,
  tenantId: string,
  caseId: string,
  resolution: WaitResolution,
): Promise<void> {
  await tx
    .updateTable("case_waits")
    .set({ resolved_at: sql<Date>`now()`, resolution })
    .where("tenant_id", "=", tenantId)
    .where("case_id", "=", caseId)
    .where("resolved_at", "is", null)
    .execute();
}
