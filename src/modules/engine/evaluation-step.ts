import type { AppContext } from "../../platform/context.js";
import { type Applied, type ClaimedJob, type ClaimToken, RescheduleJob } from "../../platform/jobs.js";
import { getAttributesOf } from "../attributes/index.js";
import { findCase } from "../cases/index.js";
import { evaluateOnThread, ListLookups, Offloads, waitingForThreads } from "../workflows/index.js";
import { applyStep, evaluateAhead, liveLists, lookUp, type ThreadEvaluation } from "./chain.js";
import { variablesOf, workflowOf } from "./plan.js";
import { type EvaluationJobPayload, isCurrentStep } from "./step-jobs.js";

/** How many rounds of list lookups the thread's evaluation may ask for. */
const LOOKUP_ROUNDS = 8;

/**
 * A tenant's evaluations waiting for a thread of this process (not yet on one) past which its
 * next `engine.evaluate` job is given back to the queue, to run a few deadlines later, rather
 * than hold a worker slot while it waits too (decision 0029). The worker's slots stay free for
 * the other tenants' jobs, their evaluations included. A tenant whose evaluations do not queue
 * up on the threads is never held to it.
 */
export const WAITING_PER_TENANT = 4;
/** How many evaluation deadlines later a job given back runs again. */
const GIVEN_BACK_DEADLINES = 4;

/**
 * Runs a node's expression that passed its allowance on the event loop (the `engine.evaluate`
 * handler, decision 0024): on a thread, under the evaluation deadline, with no transaction open
 * and no case lock held, as an external node's call is made; then, in one transaction under the
 * case lock, the node again with that result (and those of earlier rounds), and the nodes after
 * it. A result past the deadline is a failure of the expression, which fails the case. The
 * chain's next job (this node's next expression for a thread, a later node's, an external call) is
 * written claimed by this worker, which runs it next without a claim.
 */
export async function runEvaluationStep(
  ctx: AppContext,
  job: ClaimedJob<EvaluationJobPayload>,
  claim: ClaimToken,
): Promise<Applied | undefined> {
  const step = job.payload;
  const before = await findCase(ctx.db.root, step.tenantId, step.caseId);
  if (!isCurrentStep(before, step)) return undefined;
  const attributes = (await getAttributesOf(ctx.db.root, [before])).get(before.id) ?? {};
  const lookups = new ListLookups();
  for (const a of step.answers) lookups.learn(a.list, a.value, a.found);
  const first = { offloads: Offloads.of(step.results), lookups, rounds: step.round };
  // Checked just before the evaluation joins the queue, in the same turn of the event loop.
  if (waitingForThreads(step.tenantId) >= WAITING_PER_TENANT) {
    throw new RescheduleJob(
      GIVEN_BACK_DEADLINES * ctx.config.evaluationDeadlineMs,
      "the tenant's evaluations already wait for a thread",
    );
  }
  /** One expression on a thread, with the list lookups it asks for, its result learned. */
  const onThread: ThreadEvaluation = async (wanted, threads) => {
    // The nodes as the expression saw them: what the case has, and what its node type added.
    const { nodes, ...expression } = wanted;
    const variables = { ...variablesOf(before, attributes, before.node_outputs), nodes };
    for (let round = 0; ; round++) {
      const result = await evaluateOnThread(
        step.tenantId,
        { ...expression, variables, answers: threads.lookups.read() },
        ctx.config.evaluationDeadlineMs,
      );
      if (result.missing.length === 0 || round >= LOOKUP_ROUNDS) {
        threads.offloads.learn(wanted.kind, wanted.source, result);
        return;
      }
      for (const probe of result.missing) threads.lookups.answer(probe.list, probe.value);
      await lookUp(liveLists(ctx, ctx.db.root, step.tenantId), threads.lookups, step.nodeId);
    }
  };
  await onThread(step.expression, first);
  const wf = await workflowOf(ctx.nodeTypes, ctx.db.root, before);
  const threads = await evaluateAhead(
    ctx,
    ctx.db.root,
    before,
    wf,
    { seq: step.seq, nodeId: step.nodeId, attributes, threads: first },
    onThread,
  );
  return applyStep(ctx, job, claim, (tx, row) => workflowOf(ctx.nodeTypes, tx, row), { attributes, threads });
}
