import type { TraceNotes } from "../cases/index.js";
import { isJsonObject } from "../workflows/index.js";
import { listActionCallsOfCase, listRunsOfCase } from "./providers.repo.js";
import { listReviewsFor } from "./screening.repo.js";

// What the trace of a case shows of its providers after their steps ran (contract sections 4
// and 5): the vendor calls made by pending and durable actions, on the step of the node whose
// run they acted on, and the analysts' verdicts on the hits of a screening, on the case's last
// step of that broker. Never bodies, tokens or links; a verdict names the hit by its vendor id.

type Entry = Parameters<TraceNotes>[3][number];

/** Whether a vendor call was made by an action: not by its node (`node:<id>`) nor the service's poll. */
const byAction = (actor: unknown) =>
  typeof actor === "string" && !actor.startsWith("node:") && actor !== "system";

export const providerTraceNotes: TraceNotes = async (db, tenantId, caseId, trace) => {
  if (!trace.some((e) => e.nodeType === "provider")) return trace;
  const [runs, calls, reviews] = await Promise.all([
    listRunsOfCase(db, tenantId, caseId),
    listActionCallsOfCase(db, tenantId, caseId),
    listReviewsFor(db, tenantId, { caseId, entityIds: [] }),
  ]);
  const seqOfRun = new Map(runs.map((r) => [r.id, r.seq]));
  // The runs come newest first: the first of a broker is its last step.
  const lastStepOf = new Map<string, number>();
  for (const run of runs) if (!lastStepOf.has(run.broker_id)) lastStepOf.set(run.broker_id, run.seq);
  const notes = new Map<number, { actionCalls: unknown[]; verdicts: unknown[] }>();
  const notesOf = (seq: number) => {
    const found = notes.get(seq) ?? { actionCalls: [], verdicts: [] };
    notes.set(seq, found);
    return found;
  };
  for (const call of calls) {
    const seq = call.run_id ? seqOfRun.get(call.run_id) : undefined;
    if (seq === undefined) continue;
    notesOf(seq).actionCalls.push({
      action: call.action,
      actor: call.actor,
      attempt: call.attempt,
      httpStatus: call.http_status,
      durationMs: call.duration_ms,
      outcome: call.outcome,
      at: call.created_at.toISOString(),
    });
  }
  for (const review of reviews) {
    const seq = lastStepOf.get(review.broker_id);
    if (seq === undefined) continue;
    notesOf(seq).verdicts.push({
      hitId: review.hit_id,
      verdict: review.verdict,
      reason: review.reason,
      actor: review.actor,
      at: review.created_at.toISOString(),
    });
  }
  return trace.map((entry): Entry => {
    if (entry.nodeType !== "provider") return entry;
    const noted = notes.get(entry.seq);
    // A node resumed by its vendor recorded the calls of the run so far, actions' included:
    // `calls` keeps the node's own, and `actionCalls` has the actions' (whenever they came).
    const calls: unknown = (entry as Record<string, unknown>).calls;
    const own = Array.isArray(calls)
      ? { calls: calls.filter((c: unknown) => !(isJsonObject(c) && byAction(c.actor))) }
      : {};
    return noted ? { ...entry, ...own, ...noted } : { ...entry, ...own };
  });
};
