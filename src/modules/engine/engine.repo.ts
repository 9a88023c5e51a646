import type { QueryCreator } from "kysely";
import { type Selectable, sql } from "kysely";
import type { Database, Executor } from "../../platform/db/index.js";
import { insertJobs, type JobSpec, notifyJobs } from "../../platform/jobs.js";
import type { CasePatch } from "../cases/cases.repo.js";
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

/**
 * Writes what a step decided in one statement: the step row (new, or the completion of the step
 * that paused), the case's new state, and the jobs that follow (with the NOTIFY that wakes the
 * workers on commit, for jobs not written already claimed). One round trip instead of three or
 * four: this is the engine's hot path. Returns the ids of the jobs written.
 */
export async function writeStep(
  tx: Executor,
  step: { mode: "insert" | "complete"; record: NewStep },
  casePatch: CasePatch,
  jobs: JobSpec<unknown>[],
): Promise<number[]> {
  const { tenantId, caseId, seq } = step.record;
  const values = stepValues(step.record);
  const withStep = tx.with("step", (db) =>
    step.mode === "insert"
      ? db.insertInto("case_steps").values(values).returning("seq")
      : db
          .updateTable("case_steps")
          .set({
            status: values.status,
            output: values.output ?? "null",
            next_node_id: values.next_node_id,
            error: values.error,
            finished_at: values.finished_at,
          })
          .where("tenant_id", "=", tenantId)
          .where("case_id", "=", caseId)
          .where("seq", "=", seq)
          .returning("seq"),
  );
  const withCase = withStep.with("kase", (db) =>
    db
      .updateTable("cases")
      .set({ ...casePatch, updated_at: new Date() })
      .where("tenant_id", "=", tenantId)
      .where("id", "=", caseId)
      .returning("id"),
  );
  if (jobs.length === 0) {
    await withCase.selectFrom(["step", "kase"]).select("kase.id").execute();
    return [];
  }
  const rows = await withCase
    .with("job", (db) => insertJobs(db as unknown as QueryCreator<Database>, jobs))
    .selectFrom("job")
    .select([
      "job.id",
      sql<string | null>`CASE WHEN job.locked_by IS NULL THEN ${notifyJobs} END`.as("notified"),
    ])
    .execute();
  return rows.map((r) => r.id);
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

export async function insertWait(tx: Executor, wait: NewWait): Promise<void> {
  await tx
    .insertInto("case_waits")
    .values({
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
    })
    .execute();
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
