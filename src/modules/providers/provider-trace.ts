import type { TraceNotes } from "../cases/index.js";
import { isJsonObject } from "../workflows/index.js";
import { listCallsOfCase, listRunsOfCase } from "./providers.repo.js";
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
    listCallsOfCase(db, tenantId, caseId),
    listReviewsFor(db, tenantId, { caseId, entityIds: [] }),
  ]);
  const seqOfRun = new Map(runs.map((r) => [r.id, r.seq]));
  // The runs come newest first: the first of a broker is its last step.
  const lastStepOf = new Map<string, number>();
  for (const run of runs) if (!lastStepOf.has(run.broker_id)) lastStepOf.set(run.broker_id, run.seq);
  const notes = new Map<number, { actionCalls: unknown[]; verdicts: unknown[] }>();
  const note = (seq: number | undefined, kind: "actionCalls" | "verdicts", fact: Record<string, unknown>) => {
    if (seq === undefined) return;
    const found = notes.get(seq) ?? { actionCalls: [], verdicts: [] };
    found[kind].push(fact);
    notes.set(seq, found);
  };
  for (const c of calls) {
    if (!c.run_id || !byAction(c.actor)) continue;
    const { action, actor, attempt } = c;
    const fact = { action, actor, attempt, httpStatus: c.http_status, durationMs: c.duration_ms };
    note(seqOfRun.get(c.run_id), "actionCalls", {
      ...fact,
      outcome: c.outcome,
      at: c.created_at.toISOString(),
    });
  }
  for (const r of reviews) {
    const fact = { hitId: r.hit_id, verdict: r.verdict, reason: r.reason, actor: r.actor };
    note(lastStepOf.get(r.broker_id), "verdicts", { ...fact, at: r.created_at.toISOString() });
  }
  return trace.map((entry): Entry => {
    if (entry.nodeType !== "provider") return entry;
    // A node resumed by its vendor recorded the calls of the run so far, actions' included:
    // `calls` keeps the node's own, and `actionCalls` has the actions' (whenever they came).
    const own: unknown = (entry as Record<string, unknown>).calls;
    const calls = Array.isArray(own)
      ? { calls: own.filter((c) => !(isJsonObject(c) && byAction(c.actor))) }
      : {};
    return { ...entry, ...calls, ...notes.get(entry.seq) };
  });
};
