import type { AppContext } from "../../platform/context.js";
import { uuid } from "../../platform/crypto.js";
import type { Executor, Tx } from "../../platform/db/index.js";
import { type Applied, type ClaimedJob, type ClaimToken, deleteJob } from "../../platform/jobs.js";
import type { DecisionEntry } from "../case-model/index.js";
import type { CaseRow } from "../cases/index.js";
import { decisionEvent, lockCase } from "../cases/index.js";
import type { CompiledWorkflow } from "../workflows/index.js";
import {
  type CompiledNode,
  ExpressionError,
  type ExpressionVariables,
  ListLookups,
  type ListProbe,
  LookupsNeeded,
  NodeEvaluationError,
  type NodeInput,
  type NodeOutcome,
  type NodeType,
  Offloads,
  ThreadNeeded,
  withListLookups,
  withOffloads,
} from "../workflows/index.js";
import {
  commit,
  emptyPlan,
  failCase,
  nodeCaseOf,
  nodeOf,
  type Planned,
  stepRecord,
  variablesOf,
} from "./plan.js";
import { AttributeReads } from "./recorded-inputs.js";
import {
  CALL_JOB,
  type EvaluationJobPayload,
  evaluationJob,
  isCurrentStep,
  type StepPayload,
  stepJob,
  waitTimeoutJob,
} from "./step-jobs.js";

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

/** Answers `inList` probes: undefined for a list the tenant does not have. */
export type ListAnswers = (probes: ListProbe[]) => Promise<Array<boolean | undefined>>;

/** The node evaluation's input, but for the variables, which `evaluate` builds once per attempt. */
export type EvaluationInput = Omit<NodeInput, "vars">;

/**
 * Evaluates a node; an expression that fails, or a value the node cannot use, fails the case.
 * An expression that reads a list answer it does not have yet ends the attempt: the answers are
 * looked up (all of one attempt in one query, in the step's transaction) and the node is
 * evaluated again with fresh variables, so that only the last attempt counts (and is metered).
 * What the node read from outside the case is recorded with its step: the list answers (`lists`
 * in its trace entry) and the customer attributes (`attributes`, `attributesAbsent`). A
 * backtest evaluates through here too, with the answers of the case's record, on the event
 * loop alone.
 */
export async function evaluate(
  type: NodeType,
  node: CompiledNode,
  input: EvaluationInput,
  vars: () => ExpressionVariables,
  answers: ListAnswers,
): Promise<NodeOutcome> {
  return (await evaluateNode(type, node, input, vars, answers, undefined)) as NodeOutcome;
}

/**
 * `evaluate`, in the engine: an expression that passes its allowance on the event loop ends the
 * evaluation with the expression it handed over (decision 0024). The chain stops there, and an
 * `engine.evaluate` job evaluates it on a thread, with no transaction open, then the node again
 * with its result.
 */
async function evaluateNode(
  type: NodeType,
  node: CompiledNode,
  input: EvaluationInput,
  vars: () => ExpressionVariables,
  answers: ListAnswers,
  threads: ThreadResults | undefined,
): Promise<NodeOutcome | ThreadWanted> {
  const lookups = threads?.lookups ?? new ListLookups();
  let attempt = new AttributeReads();
  try {
    for (let round = 0; ; round++) {
      try {
        const variables = withListLookups(vars(), lookups);
        // The input spread last: a spread's copy takes no property after it (decision 0038).
        const outcome = await type.evaluate(node, {
          vars: attempt.watch(threads ? withOffloads(variables, threads.offloads) : variables),
          ...input,
        });
        return withFacts(outcome, lookups, attempt);
      } catch (err) {
        if (err instanceof ThreadNeeded && threads) {
          const wanted = threads.offloads.takeWanted();
          if (!wanted) throw new Error(`node ${node.id} asked for a thread without saying for what`);
          return { kind: "thread", wanted, answers: lookups.read() };
        }
        if (!(err instanceof LookupsNeeded)) throw err;
        if (round >= LOOKUP_ROUNDS) {
          throw new NodeEvaluationError(node.id, `read lists more than ${LOOKUP_ROUNDS} times in a row`);
        }
        await lookUp(answers, lookups, node.id);
        attempt = new AttributeReads();
      }
    }
  } catch (err) {
    if (err instanceof ExpressionError || err instanceof NodeEvaluationError) {
      return withFacts({ kind: "fail", message: err.message }, lookups, attempt);
    }
    throw err;
  }
}

/** The list answers of the tenant's lists, read in the step's transaction (or outside any). */
export function liveLists(ctx: AppContext, db: Executor, tenantId: string): ListAnswers {
  return async (probes) => {
    if (!ctx.lists) throw new ReadsNoLists();
    return ctx.lists.contains(db, tenantId, probes);
  };
}

class ReadsNoLists extends Error {}

/** Looks up the list answers an evaluation asked for and did not have. */
export async function lookUp(answers: ListAnswers, lookups: ListLookups, nodeId: string): Promise<void> {
  const probes = lookups.takeMissing();
  let found: Array<boolean | undefined>;
  try {
    found = await answers(probes);
  } catch (err) {
    if (err instanceof ReadsNoLists)
      throw new NodeEvaluationError(nodeId, "reads lists, which this service does not keep");
    throw err;
  }
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

/** The outcome with what its node read from outside the case, as facts of its trace entry. */
function withFacts(outcome: NodeOutcome, lookups: ListLookups, reads: AttributeReads): NodeOutcome {
  const read = lookups.read();
  const attributes = reads.facts();
  if (read.length === 0 && attributes.attributes === undefined && attributes.attributesAbsent === undefined)
    return outcome;
  return {
    ...outcome,
    explain: { ...outcome.explain, ...(read.length > 0 ? { lists: read } : {}), ...attributes },
  } as NodeOutcome;
}

interface ChainStart {
  seq: number;
  nodeId: string;
  attributes: Record<string, unknown>;
  claim: ClaimToken | undefined;
  /** The result of an external node's call, when the chain starts at that node. */
  called?: { value: unknown };
  /**
   * Expressions already evaluated on threads, by the seq of the step whose node asked for them
   * (the first node's, and those of the nodes after it that `evaluateAhead` reached).
   */
  threads?: ReadonlyMap<number, ThreadResults>;
}

/**
 * Applies what a step's job found outside any transaction (an external node's call, an
 * expression evaluated on a thread): in one transaction under the case lock, provided the case
 * is still at that step and the job still there (a job run twice applies once), the chain from
 * the step's node with that result. The chain's next job is written claimed by this worker,
 * which runs it next without a claim (decision 0002).
 */
export function applyStep(
  ctx: AppContext,
  job: ClaimedJob<StepPayload>,
  claim: ClaimToken,
  workflowOf: (tx: Tx, row: CaseRow) => Promise<CompiledWorkflow>,
  found: Pick<ChainStart, "attributes" | "called" | "threads">,
): Promise<Applied | undefined> {
  const step = job.payload;
  return ctx.db.transaction(async (tx) => {
    const row = await lockCase(tx, step.tenantId, step.caseId);
    if (!isCurrentStep(row, step)) return undefined;
    if (!(await deleteJob(tx, job.id))) return undefined;
    const plan = await runChain(ctx, tx, row, await workflowOf(tx, row), {
      seq: step.seq,
      nodeId: step.nodeId,
      attributes: found.attributes,
      claim,
      called: found.called,
      threads: found.threads,
    });
    const [next] = await commit(tx, [plan]);
    return { applied: true, next };
  });
}

function noThreadResults(): ThreadResults {
  return { offloads: new Offloads(), lookups: new ListLookups(), rounds: 0 };
}

/** Expressions one `engine.evaluate` job may take to threads, beyond the one it was written for. */
export const AHEAD_ROUNDS = 8;
/** Nodes one `engine.evaluate` job may evaluate ahead of its transaction. */
export const AHEAD_NODES = 16;

/** Evaluates an expression a node handed over on a thread, and adds its result to `threads`. */
export type ThreadEvaluation = (wanted: ThreadWanted["wanted"], threads: ThreadResults) => Promise<void>;

/**
 * From a node one of whose expressions a thread has just evaluated, evaluates the chain ahead with
 * no transaction open, as far as it runs nodes that touch nothing but the case's variables
 * (`effects: "none"`): each expression such a node hands over goes to a thread at once, here,
 * rather than through a transaction and a job of its own. A workflow of several nodes that each
 * outgrow the event loop then takes one job and one transaction, not one of each per expression
 * (decision 0024). The transaction evaluates the same nodes again with these results, so what it
 * writes is what it would have written; whatever this cannot settle (a node with effects, a node
 * that still wants a thread past the bounds, an error) is left to it as before. Lists are read
 * outside the transaction, as the first node's are.
 */
export async function evaluateAhead(
  ctx: AppContext,
  reader: Executor,
  row: CaseRow,
  wf: CompiledWorkflow,
  start: { seq: number; nodeId: string; attributes: Record<string, unknown>; threads: ThreadResults },
  onThread: ThreadEvaluation,
): Promise<Map<number, ThreadResults>> {
  const ahead = new Map([[start.seq, start.threads]]);
  const outputs = { ...row.node_outputs };
  const kase = nodeCaseOf(row);
  const answers = liveLists(ctx, reader, row.tenant_id);
  let { seq, nodeId, threads } = start;
  let rounds = 0;
  try {
    while (seq - start.seq < AHEAD_NODES) {
      const { node, type } = nodeOf(wf, nodeId);
      if (type.effects !== "none") break;
      const evaluated = await evaluateNode(
        type,
        node,
        // A `none` node never uses its transaction.
        { ctx, tx: reader as Tx, case: kase, seq },
        () => variablesOf(row, start.attributes, outputs),
        answers,
        threads,
      );
      if (evaluated.kind === "thread") {
        if (threads.rounds >= THREAD_ROUNDS || rounds >= AHEAD_ROUNDS) break;
        threads.rounds += 1;
        rounds += 1;
        await onThread(evaluated.wanted, threads);
        continue;
      }
      if (evaluated.kind !== "continue") break;
      outputs[nodeId] = evaluated.output;
      seq += 1;
      nodeId = evaluated.next;
      threads = noThreadResults();
      ahead.set(seq, threads);
    }
  } catch (err) {
    // The transaction evaluates these nodes again and meets the same error there, where it counts.
    ctx.log.debug({ err, caseId: row.id, nodeId }, "evaluation ahead of the step's transaction stopped");
  }
  return ahead;
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
    const threads = start.threads?.get(seq) ?? noThreadResults();
    const evaluated = await evaluateNode(
      type,
      node,
      { ctx, tx, case: kase, seq, ...(first && start.called ? { called: start.called.value } : {}) },
      () => variablesOf(row, start.attributes, outputs),
      liveLists(ctx, tx, row.tenant_id),
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
