import type { AppContext } from "../../platform/context.js";
import type { Executor, Tx } from "../../platform/db/index.js";
import { getAttributesOf } from "../attributes/index.js";
import type { CaseRow } from "../cases/index.js";
import type { CompiledWorkflow, ListProbe, NodeOutcome, RecordedStep } from "../workflows/index.js";
import { isJsonObject, ReplayNeedsInput } from "../workflows/index.js";
import { evaluate, type ListAnswers } from "./chain.js";
import { type StepRow, stepsOfCases, type WaitRow, waitsOfCases } from "./engine.repo.js";
import { nodeCaseOf, nodeOf, variablesOf } from "./plan.js";

// Backtests (contract section 8): a past case run again on a candidate version, through the same
// node types and the same `evaluate` as a live step, with what came from outside the case
// answered from the case's record. Nothing is written and nobody is called.

/** Where a replay ended: a decision, a failure of the case, or an input the case never had. */
export interface ReplayEnd {
  decision: string | null;
  path: string[];
  /** The case would have failed: the node's message. */
  error?: string;
  /** The node that needs an input the case never had (a new external node). */
  needsInput?: string;
}

/** What the workflow did when the case ran: its own decision, with an analyst's override beside it. */
export interface PastRun {
  /** The workflow's decision; `failed` when the case failed, null when it never decided. */
  decision: string | null;
  path: string[];
  /** The decision an analyst set afterwards, if any (never taken as `before`). */
  override: string | null;
}

export interface Replayed {
  caseId: string;
  before: PastRun;
  after: ReplayEnd;
  /**
   * Inputs the record did not hold, taken as they are now: `attributes` (a customer attribute
   * the case never read, every one for a case accepted before attributes were recorded) and
   * `lists` (a list answer it never read).
   */
  current: string[];
}

/** How long a replay runs before it lets the process's other work run. */
const YIELD_EVERY_MS = 4;

/** A case the replay of one batch needs: its row, its steps and waits. */
interface PastCase {
  row: CaseRow;
  steps: StepRow[];
  waits: WaitRow[];
  attributes: Record<string, unknown>;
}

/**
 * Replays past cases on a candidate version, in their order. Reads only (`db` outside any
 * transaction): the cases' steps and waits in one query each, the customers' current attributes
 * in one, and the lists or figures a case never read, as of its own time.
 */
export async function replayCases(
  ctx: AppContext,
  db: Executor,
  wf: CompiledWorkflow,
  rows: CaseRow[],
): Promise<Replayed[]> {
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.id);
  const [steps, waits, attributes] = await Promise.all([
    stepsOfCases(db, wf.tenantId, ids),
    waitsOfCases(db, wf.tenantId, ids),
    getAttributesOf(db, rows),
  ]);
  const out: Replayed[] = [];
  let slice = performance.now();
  for (const row of rows) {
    // Replaying is mostly CPU: live work of this process (its requests, its steps) goes first
    // every few milliseconds instead of waiting for the whole batch.
    if (performance.now() - slice > YIELD_EVERY_MS) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      slice = performance.now();
    }
    const past = {
      row,
      steps: steps.get(row.id) ?? [],
      waits: waits.get(row.id) ?? [],
      attributes: attributes.get(row.id) ?? {},
    };
    try {
      out.push(await replayCase(ctx, db, wf, past));
    } catch (err) {
      // One case the replay cannot run (its record is not what it expects) must not stop the rest.
      ctx.log.warn({ err, caseId: row.id, tenantId: row.tenant_id }, "a case could not be replayed");
      out.push({
        caseId: row.id,
        before: pastRun(past),
        after: {
          decision: null,
          path: [],
          error: `the case could not be replayed: ${(err as Error).message}`,
        },
        current: [],
      });
    }
  }
  return out;
}

/** The workflow's own decision, the path it took, and an analyst's override. */
function pastRun(past: PastCase): PastRun {
  const history = past.row.decision_history ?? [];
  const own = history.find((e) => e.source !== "analyst");
  const analyst = [...history].reverse().find((e) => e.source === "analyst");
  return {
    decision: own?.value ?? (past.row.status === "failed" ? "failed" : null),
    path: past.steps.map((s) => s.node_id),
    override: analyst?.value ?? null,
  };
}

/** Each node's latest step in the case, with the wait it opened. */
function recordsOf(past: PastCase): Map<string, { type: string; step: RecordedStep }> {
  const waits = new Map(past.waits.map((w) => [`${w.node_id}\u0000${w.seq}`, w]));
  const records = new Map<string, { type: string; step: RecordedStep }>();
  for (const s of past.steps) {
    const wait = waits.get(`${s.node_id}\u0000${s.seq}`);
    const error = isJsonObject(s.error) && typeof s.error.message === "string" ? s.error.message : null;
    records.set(s.node_id, {
      type: s.node_type,
      step: {
        seq: s.seq,
        status: s.status as RecordedStep["status"],
        output: s.output,
        explain: s.explain,
        next: s.next_node_id,
        error,
        ...(wait
          ? {
              wait: {
                id: wait.id,
                kind: wait.kind,
                ref: wait.ref,
                expiresAt: wait.expires_at,
                data: wait.data,
                resolution: wait.resolution,
              },
            }
          : {}),
      },
    });
  }
  return records;
}

/** How a wait that ended without its node's answer ended (the case closed, or failed). */
const NO_ANSWER = new Set(["closed", "failed"]);

/** The most nodes one replay runs; definitions have no cycles, so this only bounds a bad one. */
const MAX_NODES = 1000;

async function replayCase(
  ctx: AppContext,
  db: Executor,
  wf: CompiledWorkflow,
  past: PastCase,
): Promise<Replayed> {
  const { row } = past;
  const records = recordsOf(past);
  const current = new Set<string>();

  // The attributes each step read, the latest reading of a key winning; the others as they are now.
  const known = new Set<string>();
  const attributes: Record<string, unknown> = { ...past.attributes };
  const lists = new Map<string, boolean>();
  for (const s of past.steps) {
    const facts = s.explain ?? {};
    if (isJsonObject(facts.attributes)) {
      for (const [key, value] of Object.entries(facts.attributes)) {
        known.add(key);
        Object.defineProperty(attributes, key, {
          value,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
    }
    if (Array.isArray(facts.attributesAbsent)) {
      for (const key of facts.attributesAbsent) {
        if (typeof key !== "string") continue;
        known.add(key);
        delete attributes[key];
      }
    }
    if (Array.isArray(facts.lists)) {
      for (const a of facts.lists) {
        if (isJsonObject(a) && typeof a.found === "boolean") lists.set(`${a.list}\u0000${a.value}`, a.found);
      }
    }
  }
  const answers: ListAnswers = async (probes) => {
    const found = probes.map((p) => lists.get(`${p.list}\u0000${p.value}`));
    const missing: ListProbe[] = probes.filter((_, i) => found[i] === undefined);
    if (missing.length === 0) return found;
    current.add("lists");
    if (!ctx.lists) throw new Error("this service keeps no lists");
    const now = await ctx.lists.contains(db, row.tenant_id, missing);
    let j = 0;
    return found.map((f) => f ?? now[j++]);
  };

  const outputs: Record<string, unknown> = {};
  const path: string[] = [];
  const end = (e: Omit<ReplayEnd, "path">): Replayed => ({
    caseId: row.id,
    before: pastRun(past),
    after: { ...e, path },
    current: [...current].sort(),
  });
  const kase = nodeCaseOf(row);
  let nodeId = wf.start;
  for (let n = 0; n < MAX_NODES; n++) {
    const { node, type } = nodeOf(wf, nodeId);
    path.push(nodeId);
    if (type.effects !== "none" && !type.replays) {
      return end({ decision: null, error: `node ${nodeId}: a ${node.type} node cannot be replayed` });
    }
    const record = records.get(nodeId);
    const step = record?.type === node.type ? record.step : undefined;
    let outcome: NodeOutcome;
    try {
      outcome = await evaluate(
        type,
        node,
        // A replayed node reads through `replay.db` and writes nothing: it has no transaction.
        { ctx, tx: db as Tx, case: kase, seq: step?.seq ?? n + 1, replay: { step, db } },
        () => variablesOf(row, attributes, outputs),
        answers,
      );
    } catch (err) {
      if (err instanceof ReplayNeedsInput) return end({ decision: null, needsInput: err.nodeId });
      throw err;
    }
    const facts = outcome.explain ?? {};
    const read = [
      ...Object.keys(isJsonObject(facts.attributes) ? facts.attributes : {}),
      ...(Array.isArray(facts.attributesAbsent) ? facts.attributesAbsent : []),
    ];
    if (read.some((key) => !known.has(key))) current.add("attributes");

    if (outcome.kind === "wait") {
      // The wait's answer, as the case recorded it: a callback's body, an information request's answer.
      const wait = step?.wait;
      if (!type.resume || !wait?.resolution || NO_ANSWER.has(wait.resolution)) {
        return end({ decision: null, needsInput: nodeId });
      }
      const resumed = type.resume(node, { kind: wait.resolution, output: step?.output }, wait);
      if (resumed.kind === "keep_waiting") return end({ decision: null, needsInput: nodeId });
      outcome = resumed;
    }
    switch (outcome.kind) {
      case "continue":
        outputs[nodeId] = outcome.output;
        nodeId = outcome.next;
        continue;
      case "decide":
        return end({ decision: outcome.decision });
      case "fail":
        return end({ decision: null, error: outcome.message });
    }
  }
  return end({ decision: null, error: `the replay ran more than ${MAX_NODES} nodes` });
}
