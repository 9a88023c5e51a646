import type { AppContext } from "../../platform/context.js";
import { uuid } from "../../platform/crypto.js";
import type { Executor, Tx } from "../../platform/db/index.js";
import type { ClaimToken } from "../../platform/jobs.js";
import type { DecisionEntry } from "../case-model/index.js";
import type { CaseRow } from "../cases/index.js";
import { decisionEvent } from "../cases/index.js";
import type { CompiledWorkflow } from "../workflows/index.js";
import {
  type CompiledNode,
  ExpressionError,
  type ExpressionVariables,
  ListLookups,
  LookupsNeeded,
  NodeEvaluationError,
  type NodeOutcome,
  type NodeType,
  Offloads,
  ThreadNeeded,
  withListLookups,
  withOffloads,
} from "../workflows/index.js";
import { emptyPlan, failCase, nodeCaseOf, nodeOf, type Planned, stepRecord, variablesOf } from "./plan.js";
import { CALL_JOB, type EvaluationJobPayload, evaluationJob, stepJob, waitTimeoutJob } from "./step-jobs.js";

/** How many rounds of list lookups one node evaluation may ask for. */
const LOOKUP_ROUNDS = 8;
/** How many of one node's expressions may go to a thread (each is one more round). */
export const THREAD_ROUNDS = 16;

/** A node evaluation that handed an expression over to a thread (decision 0024). */
interface ThreadWanted {
  kind: "thread";
  wanted: EvaluationJobPayload["expression"];
  /** The list answers the node evaluation had learned. */
  answers: EvaluationJobPayload["answers"];
}

/** What a node evaluation starts with when an `engine.evaluate` job ran some of it on a thread. */
export interface ThreadResults {
  offloads: Offloads;
  lookups: ListLookups;
  rounds: number;
}

/**
 * Evaluates a node; an expression that fails, or a value the node cannot use, fails the case.
 * An expression that reads a list answer it does not have yet ends the attempt: the answers are
 * looked up (all of one attempt in one query, in the step's transaction) and the node is
 * evaluated again with fresh variables, so that only the last attempt counts (and is metered).
 * An expression that passes its allowance on the event loop ends the evaluation with the
 * expression it handed over: the chain stops there, and an `engine.evaluate` job evaluates it
 * on a thread, with no transaction open, then the node again with its result (decision 0024).
 * The list answers the node read are recorded with its step (`lists` in its trace entry).
 */
async function evaluate(
  type: NodeType,
  node: CompiledNode,
  input: Omit<Parameters<NodeType["evaluate"]>[1], "vars">,
  vars: () => ExpressionVariables,
  { offloads, lookups }: ThreadResults,
): Promise<NodeOutcome | ThreadWanted> {
  try {
    for (let round = 0; ; round++) {
      try {
        const outcome = await type.evaluate(node, {
          ...input,
          vars: withOffloads(withListLookups(vars(), lookups), offloads),
        });
        return withListAnswers(outcome, lookups);
      } catch (err) {
        if (err instanceof ThreadNeeded) {
          const wanted = offloads.takeWanted();
          if (!wanted) throw new Error(`node ${node.id} asked for a thread without saying for what`);
          return { kind: "thread", wanted, answers: lookups.read() };
        }
        if (!(err instanceof LookupsNeeded)) throw err;
        if (round >= LOOKUP_ROUNDS) {
          throw new NodeEvaluationError(node.id, `read lists more than ${LOOKUP_ROUNDS} times in a row`);
        }
        await lookUp(input.ctx, input.tx, input.case.tenantId, lookups, node.id);
      }
    }
  } catch (err) {
    if (err instanceof ExpressionError || err instanceof NodeEvaluationError) {
      return withListAnswers({ kind: "fail", message: err.message }, lookups);
    }
    throw err;
  }
}

/** Looks up the list answers an evaluation asked for and did not have. */
export async function lookUp(
  ctx: AppContext,
  db: Executor,
  tenantId: string,
  lookups: ListLookups,
  nodeId: string,
): Promise<void> {
  const lists = ctx.lists;
  const probes = lookups.takeMissing();
  if (!lists) throw new NodeEvaluationError(nodeId, "reads lists, which this service does not keep");
  const found = await lists.contains(db, tenantId, probes);
  probes.forEach((probe, i) => {
    const answer = found[i];
    if (answer === undefined) {
      throw new NodeEvaluationError(
        nodeId,
        `reads the list "${probe.list}", which this tenant does not have`,
      );
    }
    lookups.learn(probe.list, probe.value, answer);
  });
}

/** The outcome with the list answers its node read, as a fact of its trace entry. */
function withListAnswers(outcome: NodeOutcome, lookups: ListLookups): NodeOutcome {
  const read = lookups.read();
  if (read.length === 0) return outcome;
  return { ...outcome, explain: { ...outcome.explain, lists: read } } as NodeOutcome;
}

interface ChainStart {
  seq: number;
  nodeId: string;
  attributes: Record<string, unknown>;
  claim: ClaimToken | undefined;
  /** The result of an external node's call, when the chain starts at that node. */
  called?: { value: unknown };
  /** The first node's expressions already evaluated on a thread, and how many rounds that took. */
  threads?: ThreadResults;
}

/**
 * Runs the case's nodes from `start` in the step's transaction, each its own step row, until the
 * workflow ends, pauses, fails, or reaches a node that calls outside the service (that node gets
 * a job of its own, run as the continuation of this one when a claim token is given).
 */
export async function runChain(
  ctx: AppContext,
  tx: Tx,
  row: CaseRow,
  wf: CompiledWorkflow,
  start: ChainStart,
): Promise<Planned> {
  const plan = emptyPlan(row);
  const outputs = { ...row.node_outputs };
  const kase = nodeCaseOf(row);
  let seq = start.seq;
  let nodeId = start.nodeId;
  for (;;) {
    const { node, type } = nodeOf(wf, nodeId);
    const first = seq === start.seq;
    if (type.effects === "external" && !(first && start.called)) {
      const job = {
        ...stepJob(row.tenant_id, row.id, seq, nodeId, CALL_JOB),
        ...(start.claim ? { claimedBy: start.claim } : {}),
      };
      plan.write.jobs.push(job);
      if (start.claim) plan.continuation = job;
      plan.write.state = { ...plan.write.state, status: "running", stepSeq: seq - 1, currentNodeId: nodeId };
      return plan;
    }
    const startedAt = new Date();
    const threads =
      first && start.threads
        ? start.threads
        : { offloads: new Offloads(), lookups: new ListLookups(), rounds: 0 };
    const evaluated = await evaluate(
      type,
      node,
      { ctx, tx, case: kase, seq, ...(first && start.called ? { called: start.called.value } : {}) },
      () => variablesOf(row, start.attributes, outputs),
      threads,
    );
    if (evaluated.kind === "thread" && threads.rounds < THREAD_ROUNDS) {
      // Like a call outside the service: the chain stops here and a job evaluates the expression
      // on a thread with no transaction open, then this node again (decision 0024).
      const job = {
        ...evaluationJob(row, seq, nodeId, {
          expression: evaluated.wanted,
          round: threads.rounds + 1,
          results: threads.offloads.entries(),
          answers: evaluated.answers,
        }),
        ...(start.claim ? { claimedBy: start.claim } : {}),
      };
      plan.write.jobs.push(job);
      if (start.claim) plan.continuation = job;
      plan.write.state = {
        ...plan.write.state,
        status: "running",
        stepSeq: seq - 1,
        currentNodeId: nodeId,
        nodeOutputs: outputs,
      };
      return plan;
    }
    const outcome: NodeOutcome =
      evaluated.kind === "thread"
        ? {
            kind: "fail",
            message: `node ${nodeId} needed a thread for more than ${THREAD_ROUNDS} expressions`,
          }
        : evaluated;
    const step = stepRecord(row, { seq, nodeId, nodeType: node.type, startedAt }, outcome);
    plan.write.inserts.push(step);
    plan.write.state = { ...plan.write.state, stepSeq: seq };
    switch (outcome.kind) {
      case "continue":
        step.nextNodeId = outcome.next;
        outputs[nodeId] = outcome.output;
        plan.events.push(...(outcome.events ?? []));
        plan.write.state = {
          ...plan.write.state,
          status: "running",
          currentNodeId: outcome.next,
          nodeOutputs: outputs,
        };
        seq += 1;
        nodeId = outcome.next;
        continue;
      case "decide": {
        outputs[nodeId] = outcome.output;
        const entry: DecisionEntry = {
          value: outcome.decision,
          source: outcome.source,
          actor: `node:${nodeId}`,
          decidedAt: step.finishedAt?.toISOString() ?? startedAt.toISOString(),
        };
        const result = { decision: entry, decisionHistory: [entry], workflow_result: outcome.result };
        plan.write.state = {
          ...plan.write.state,
          status: outcome.decision === "in_review" ? "in_review" : "decided",
          currentNodeId: null,
          nodeOutputs: outputs,
          decision: entry,
          decisionHistory: [entry],
          workflowResult: outcome.result,
        };
        const type = outcome.decision === "in_review" ? "case.pending_review" : "case.decided";
        plan.events.push(decisionEvent(type, row, result, new Date(entry.decidedAt)));
        return plan;
      }
      case "wait": {
        step.status = "waiting";
        step.finishedAt = null;
        const { wait } = outcome;
        const waitId = wait.id ?? uuid();
        plan.write.waits.push({
          id: waitId,
          tenantId: row.tenant_id,
          caseId: row.id,
          seq,
          nodeId,
          kind: wait.kind,
          ref: wait.ref,
          providerId: wait.providerId ?? null,
          expiresAt: wait.expiresAt,
          data: wait.data ?? null,
        });
        if (wait.timesOut && wait.expiresAt)
          plan.write.jobs.push(waitTimeoutJob(row, waitId, wait.expiresAt));
        plan.events.push(...(outcome.events ?? []));
        plan.write.state = {
          ...plan.write.state,
          status: "waiting",
          currentNodeId: nodeId,
          nodeOutputs: outputs,
        };
        return plan;
      }
      case "fail":
        step.status = "failed";
        step.error = { message: outcome.message };
        failCase(ctx, row, plan, nodeId, outcome.message);
        return plan;
    }
  }
}
