import type { QueryCreator } from "kysely";
import { type RawBuilder, sql } from "kysely";
import {
  type Database,
  type Executor,
  findRows,
  jsonOrNull,
  lastStatement,
  type Row,
  updateRows,
} from "../../platform/db/index.js";
import { insertJobs, type JobSpec, notifyJobs } from "../../platform/jobs.js";
import { type CaseStateWrite, caseStatesUpdate } from "../cases/index.js";

export type WaitRow = Row<"case_waits">;
export type StepRow = Row<"case_steps">;
/** How a wait ended: `timeout` and `closed`, or what its node type reported (`callback`, `answered`…). */
export type WaitResolutionKind = string;

/** Where in a case's run a step or a wait is: the case, the step's number, the node. */
interface RunPlace {
  tenantId: string;
  caseId: string;
  seq: number;
  nodeId: string;
}

function placeValues(place: RunPlace) {
  return { tenant_id: place.tenantId, case_id: place.caseId, seq: place.seq, node_id: place.nodeId };
}

export interface NewStep extends RunPlace {
  nodeType: string;
  status: "completed" | "waiting" | "failed";
  output: unknown;
  nextNodeId: string | null;
  error: Record<string, unknown> | null;
  explain: Record<string, unknown> | null;
  startedAt: Date;
  finishedAt: Date | null;
}

/**
 * A step's row, its JSON columns as values (for a JSON document of rows). Spelled out, not
 * `placeValues` spread: on Node.js 20 each property after a spread's copy costs a map
 * transition of its own, 6 µs a step here (decision 0038).
 */
function stepRow(step: NewStep) {
  return {
    tenant_id: step.tenantId,
    case_id: step.caseId,
    seq: step.seq,
    node_id: step.nodeId,
    node_type: step.nodeType,
    status: step.status,
    output: step.output,
    next_node_id: step.nextNodeId,
    error: step.error,
    explain: step.explain,
    created_at: step.startedAt,
    finished_at: step.finishedAt,
  };
}

/** A step's row, its JSON columns as text (for statement parameters). */
function stepValues(step: NewStep) {
  return {
    ...stepRow(step),
    output: jsonOrNull(step.output),
    error: jsonOrNull(step.error),
    explain: jsonOrNull(step.explain),
  };
}

/** The workflow columns of a case, as a step leaves them. */
export type CaseState = Omit<CaseStateWrite, "caseId" | "tenantId">;

/**
 * What one step did to one case, written with the other cases of its batch by `writeSteps`: the
 * step rows of every node it ran (and the completion of the step that had paused, when it
 * resumed one), the case's new state, the waits it opened and the jobs that follow.
 */
export interface CaseWrite {
  tenantId: string;
  caseId: string;
  inserts: NewStep[];
  completes: NewStep[];
  state: CaseState;
  jobs: JobSpec<unknown>[];
  waits: NewWait[];
}

/**
 * Writes the steps of a batch in one statement: the step rows (new, or the completion of steps
 * that paused), the cases' new states, the waits they open, and the jobs that follow, with the
 * NOTIFY that wakes the workers on commit for jobs not written already claimed. One round trip
 * for the batch instead of three or four per step: this is the engine's hot path. Returns the id
 * of each job written, by job key.
 */
export async function writeSteps(
  tx: Executor,
  writes: CaseWrite[],
  also?: StatementPart,
  options: { last?: boolean } = {},
): Promise<{ jobs: Map<string, number>; also: unknown }> {
  if (writes.length === 0) return { jobs: new Map(), also: undefined };
  const now = new Date();
  const parts = [];
  const inserts = writes.flatMap((w) => w.inserts);
  if (inserts.length > 0) {
    // The batch's step rows as one JSON document: one parameter and one statement text for any
    // number of steps, their outputs and traces written once into it instead of each as text of
    // its own (this is most of what the engine sends).
    parts.push(sql`step_insert AS (
      INSERT INTO case_steps
        (tenant_id, case_id, seq, node_id, node_type, status, output, next_node_id, error, explain, created_at, finished_at)
      SELECT * FROM jsonb_to_recordset(${JSON.stringify(inserts.map(stepRow))}::jsonb)
        AS s (tenant_id uuid, case_id uuid, seq int, node_id text, node_type text, status text, output jsonb,
              next_node_id text, error jsonb, explain jsonb, created_at timestamptz, finished_at timestamptz)
    )`);
  }
  const completes = writes.flatMap((w) => w.completes).map(stepValues);
  if (completes.length > 0) {
    const rows = sql.join(
      completes.map(
        (c) =>
          sql`(${c.tenant_id}::uuid, ${c.case_id}::uuid, ${c.seq}::int, ${c.status}, ${c.output}::jsonb, ${c.next_node_id}::text, ${c.error}::jsonb, ${c.explain}::jsonb, ${c.finished_at}::timestamptz)`,
      ),
    );
    parts.push(sql`step_complete AS (
      UPDATE case_steps s
      SET status = v.status, output = v.output, next_node_id = v.next_node_id, error = v.error,
          explain = coalesce(v.explain, s.explain), finished_at = v.finished_at
      FROM (VALUES ${rows}) AS v(tenant_id, case_id, seq, status, output, next_node_id, error, explain, finished_at)
      WHERE s.tenant_id = v.tenant_id AND s.case_id = v.case_id AND s.seq = v.seq
    )`);
  }
  parts.push(
    sql`kase AS (${caseStatesUpdate(
      writes.map((w) => ({ caseId: w.caseId, tenantId: w.tenantId, ...w.state })),
      now,
    )})`,
  );
  const waits = writes.flatMap((w) => w.waits).map(waitValues);
  if (waits.length > 0) parts.push(sql`wait AS (${tx.insertInto("case_waits").values(waits)})`);
  if (also) parts.push(...also.ctes);
  const jobs = writes.flatMap((w) => w.jobs);
  if (jobs.length > 0) {
    parts.push(
      sql`job AS (${insertJobs(tx as unknown as QueryCreator<Database>, jobs).returning("job_key")})`,
    );
  }
  // One row: the cases updated, the jobs as [id, key] pairs (each waking the workers unless
  // written claimed), and the other part's column.
  const jobsColumn =
    jobs.length > 0
      ? sql`(SELECT json_agg(json_build_array(job.id, job.job_key,
          (CASE WHEN job.locked_by IS NULL THEN ${notifyJobs} END) IS NULL)) FROM job)`
      : sql`NULL::json`;
  // Cases run from the rows their insert or claim gave fail the statement itself when one of them
  // was claimed again: a statement that is its transaction (`options.last`) has no rollback after
  // it. (A text cast to int is how a plain statement raises an error; its text names the count.)
  const staleCheck = writes.some((w) => w.state.startedAs !== undefined)
    ? sql`CASE WHEN (SELECT count(*) FROM kase) < ${writes.length}
        THEN (${STALE_START} || (${writes.length} - (SELECT count(*) FROM kase)))::int END`
    : sql`NULL`;
  const query = sql<{
    cases: number;
    jobs: Array<[number, string | null, unknown]> | null;
    also: unknown;
  }>`
    WITH ${sql.join(parts)}
    SELECT (SELECT count(*) FROM kase) AS cases, ${jobsColumn} AS jobs,
           ${also ? also.column : sql`NULL`} AS also, ${staleCheck} AS stale`.compile(tx);
  // The statement itself fails when a case was claimed again, so a result means all were written.
  const { rows } = await tx
    .executeQuery(options.last ? lastStatement(query) : query)
    .catch((err: unknown) => {
      const stale = STALE_COUNT.exec((err as Error).message ?? "");
      if ((err as { code?: string }).code === "22P02" && stale) throw new StaleStart(Number(stale[1]));
      throw err;
    });
  const row = rows[0];
  return {
    jobs: new Map((row?.jobs ?? []).flatMap(([id, key]) => (key === null ? [] : [[key, id] as const]))),
    also: row?.also,
  };
}

/** The text the batch's write fails with when some of its cases were claimed again. */
const STALE_START = "stale start: ";
/** The count of cases claimed again, in the message of that failure (the text `int` refused). */
const STALE_COUNT = new RegExp(`"${STALE_START}(\\d+)"`);

/**
 * Cases run from the rows their insert or claim gave were no longer waiting to start with the run
 * their starter counted (claimed again after its lease ran out): the batch is undone, and its cases run
 * again, each read and locked.
 */
export class StaleStart extends Error {
  constructor(cases: number) {
    super(`${cases} case(s) of the batch were claimed again before it was written`);
    this.name = "StaleStart";
  }
}

/** More of the statement that writes a batch's steps: its CTEs, and a column it selects. */
export interface StatementPart {
  ctes: RawBuilder<unknown>[];
  column: RawBuilder<unknown>;
}

export function listSteps(db: Executor, tenantId: string, caseId: string) {
  return findRows(db, "case_steps", { tenant_id: tenantId, case_id: caseId }, ["seq"]);
}

export interface NewWait extends RunPlace {
  id: string;
  kind: string;
  ref: string | null;
  providerId: string | null;
  expiresAt: Date | null;
  data: Record<string, unknown> | null;
}

function waitValues(wait: NewWait) {
  return {
    id: wait.id,
    ...placeValues(wait),
    kind: wait.kind,
    ref: wait.ref,
    provider_id: wait.providerId,
    expires_at: wait.expiresAt,
    data: jsonOrNull(wait.data),
  };
}

/** How `resumeWait` names the wait it resolves: by id, or by its node type's kind and reference. */
export type WaitLookup =
  | { tenantId: string; caseId: string; waitId: string }
  | { tenantId: string; caseId: string; kind: string; ref: string };

/** The wait of the case (resolved or not), the latest when a reference was reused. */
export function findWait(tx: Executor, lookup: WaitLookup): Promise<WaitRow | undefined> {
  let query = tx
    .selectFrom("case_waits")
    .selectAll()
    .where("tenant_id", "=", lookup.tenantId)
    .where("case_id", "=", lookup.caseId);
  query =
    "waitId" in lookup
      ? query.where("id", "=", lookup.waitId)
      : query.where("kind", "=", lookup.kind).where("ref", "=", lookup.ref);
  return query.orderBy("resolved_at", "desc").orderBy("created_at", "desc").limit(1).executeTakeFirst();
}

/** The open waits of the tenant of one kind with one reference, across cases (a vendor's applicant). */
export function findOpenWaitsByRef(
  db: Executor,
  tenantId: string,
  kind: string,
  ref: string,
): Promise<WaitRow[]> {
  return findRows(db, "case_waits", { tenant_id: tenantId, kind, ref, resolved_at: null }, ["created_at"]);
}

export function listOpenWaits(db: Executor, tenantId: string, caseId: string): Promise<WaitRow[]> {
  return findRows(db, "case_waits", { tenant_id: tenantId, case_id: caseId, resolved_at: null }, [
    "created_at",
  ]);
}

/** Resolves an open wait; false when it was already resolved (the other resolution won). */
export async function resolveWait(
  tx: Executor,
  tenantId: string,
  waitId: string,
  resolution: WaitResolutionKind,
): Promise<boolean> {
  const open = { tenant_id: tenantId, id: waitId, resolved_at: null };
  return (await updateRows(tx, "case_waits", open, { resolved_at: sql<Date>`now()`, resolution })) > 0;
}

export async function resolveOpenWaitsOfCase(
  tx: Executor,
  tenantId: string,
  caseId: string,
  resolution: WaitResolutionKind,
): Promise<void> {
  const open = { tenant_id: tenantId, case_id: caseId, resolved_at: null };
  await updateRows(tx, "case_waits", open, { resolved_at: sql<Date>`now()`, resolution });
}

/** Groups rows by their case id, each group in the order read. */
function byCase<R extends { case_id: string }>(rows: R[]): Map<string, R[]> {
  const groups = new Map<string, R[]>();
  for (const row of rows) {
    const group = groups.get(row.case_id);
    if (group) group.push(row);
    else groups.set(row.case_id, [row]);
  }
  return groups;
}

/** The steps of the tenant's cases, by case, each case's in order (a backtest's batch). */
export async function stepsOfCases(
  db: Executor,
  tenantId: string,
  caseIds: string[],
): Promise<Map<string, StepRow[]>> {
  return byCase(
    await findRows(db, "case_steps", { tenant_id: tenantId, case_id: caseIds }, ["case_id", "seq"]),
  );
}

/** The waits of the tenant's cases, by case (a backtest's batch). */
export async function waitsOfCases(
  db: Executor,
  tenantId: string,
  caseIds: string[],
): Promise<Map<string, WaitRow[]>> {
  return byCase(await findRows(db, "case_waits", { tenant_id: tenantId, case_id: caseIds }, ["created_at"]));
}
