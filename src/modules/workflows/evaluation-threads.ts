import path from "node:path";
import { fileURLToPath } from "node:url";
import type { ErrorDetail } from "../../platform/errors.js";
import { DeadlineExceeded, ThreadPool } from "../../platform/thread-pool.js";
import type { SchemaTask } from "./json-schema.js";
import type { ExpressionResult, ExpressionTask } from "./workflow.expressions.js";

/**
 * Evaluation that may run long goes to worker threads with a wall-clock deadline (decision
 * 0024): expressions that passed their allowance on the event loop, and input-schema
 * validations whose patterns' work passed theirs. Past the deadline the thread is ended, which
 * stops even one long match, and the evaluation fails; the event loop never waits on it.
 * Tasks are queued per tenant, and tenants take turns (decision 0029).
 */

export type ThreadTask = ({ type: "expression" } & ExpressionTask) | ({ type: "schema" } & SchemaTask);

/**
 * How far below the process's CPU priority the evaluation threads run (`CDS_EVALUATION_NICENESS`,
 * decision 0029): when set, what outgrew the event loop's allowance yields a shared core to the
 * event loops that serve everyone else. Off by default. Read when the threads start.
 */
export const EVALUATION_NICENESS = 0;
let niceness = EVALUATION_NICENESS;

/** Sets the evaluation threads' nice increment in this process (before their first task). */
export function setEvaluationNiceness(increment: number): void {
  niceness = increment;
}

let pool: ThreadPool<ThreadTask, unknown> | undefined;

function threads(): ThreadPool<ThreadTask, unknown> {
  // The thread's script sits beside this file, as .ts in the sources and .js in dist/.
  const here = fileURLToPath(import.meta.url);
  const script = new URL(`./evaluation.worker${path.extname(here)}`, import.meta.url);
  pool ??= new ThreadPool<ThreadTask, unknown>(script, { niceness });
  return pool;
}

function overrun(deadlineMs: number): string {
  return `did not finish within the evaluation deadline of ${deadlineMs} ms`;
}

/** The tenant's evaluations waiting for a thread of this process, or on one. */
export function pendingOnThreads(tenantId: string): number {
  return pool?.pending(tenantId) ?? 0;
}

/** The tenant's evaluations waiting for a thread of this process. */
export function waitingForThreads(tenantId: string): number {
  return pool?.waiting(tenantId) ?? 0;
}

/** An expression's evaluation on a thread; past the deadline, a failure saying so. */
export async function evaluateOnThread(
  tenantId: string,
  task: ExpressionTask,
  deadlineMs: number,
): Promise<ExpressionResult> {
  try {
    return (await threads().run({ type: "expression", ...task }, deadlineMs, tenantId)) as ExpressionResult;
  } catch (err) {
    if (err instanceof DeadlineExceeded) return { spent: 0, missing: [], error: overrun(deadlineMs) };
    // The thread died under it (out of memory, say): the expression's doing, not the job's.
    return { spent: 0, missing: [], error: `stopped its evaluation thread: ${(err as Error).message}` };
  }
}

/** An input schema's validation of a payload on a thread; past the deadline, one problem saying so. */
export async function validateOnThread(
  tenantId: string,
  task: SchemaTask,
  deadlineMs: number,
): Promise<ErrorDetail[]> {
  try {
    return (await threads().run({ type: "schema", ...task }, deadlineMs, tenantId)) as ErrorDetail[];
  } catch (err) {
    const why =
      err instanceof DeadlineExceeded ? overrun(deadlineMs) : `stopped its thread: ${(err as Error).message}`;
    return [
      { path: "payload", message: `could not be checked against the input schema: its validation ${why}` },
    ];
  }
}
