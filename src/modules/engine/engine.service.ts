import type { AppContext } from "../../platform/context.js";
import type { Tx } from "../../platform/db/index.js";
import type { Applied, ClaimedJob, ClaimToken, Continuation } from "../../platform/jobs.js";
import { getAttributesOf } from "../attributes/index.js";
import { findCase, lockCases } from "../cases/index.js";
import { applyStep, runChain } from "./chain.js";
import { commit, nodeCaseOf, nodeOf, type Planned, variablesOf, workflowOf } from "./plan.js";
import { isCurrentStep, type StepPayload } from "./step-jobs.js";

/**
 * The workflow engine (decision 0011). A step is a job: `engine.step` runs, in one transaction
 * holding the case lock, the case's nodes one after another for as long as they touch nothing
 * outside the database (rules, score, decision, notify, a node that raises a request or opens
 * a wait), each recorded as its own step row, up to the end, a pause, or a node whose type calls
 * outside the service. Such a node runs as an `engine.call` job: its call first, with no
 * transaction open, then, under the case lock, what it decided and the nodes after it.
 *
 * A worker runs the step jobs it holds in batches, one transaction per batch. A crash anywhere
 * rolls the batch back and its jobs run again; a step that committed is never run twice (its job
 * row is deleted in that same transaction, and a step whose case has moved on is ignored).
 */
/**
 * Runs a batch of step jobs (the `engine.step` handler) inside the batch's transaction. A step for
 * a case that has moved on (closed by an analyst, or a duplicate) does nothing.
 */
export async function runSteps(
  ctx: AppContext,
  tx: Tx,
  jobs: ClaimedJob<StepPayload>[],
  claim: ClaimToken | undefined,
): Promise<Continuation[]> {
  const locked = await lockCases(
    tx,
    jobs.map((j) => j.payload.caseId),
  );
  const rows = new Map(locked.map((r) => [r.id, r]));
  const attributes = await getAttributesOf(tx, [...rows.values()]);
  const planned: Planned[] = [];
  for (const { payload: step } of jobs) {
    const row = rows.get(step.caseId);
    if (!isCurrentStep(row, step)) continue;
    const wf = await workflowOf(ctx.nodeTypes, tx, row);
    planned.push(
      await runChain(ctx, tx, row, wf, {
        seq: step.seq,
        nodeId: step.nodeId,
        attributes: attributes.get(row.id) ?? {},
        claim,
      }),
    );
  }
  return commit(tx, planned);
}

/**
 * Runs an external node's step (the `engine.call` handler): its call with no transaction open
 * and no case lock held, then, in one transaction under the case lock, what the node decided and
 * the nodes after it. The job row is deleted in that transaction, so the result is applied once;
 * should the process die between the call and the commit, the call is made again.
 */
export async function runCallStep(
  ctx: AppContext,
  job: ClaimedJob<StepPayload>,
  claim: ClaimToken,
): Promise<Applied | undefined> {
  const step = job.payload;
  const before = await findCase(ctx.db.root, step.tenantId, step.caseId);
  if (!isCurrentStep(before, step)) return undefined;
  const wf = await workflowOf(ctx.nodeTypes, ctx.db.root, before);
  const { node, type } = nodeOf(wf, step.nodeId);
  const attributes = (await getAttributesOf(ctx.db.root, [before])).get(before.id) ?? {};
  const vars = variablesOf(before, attributes, before.node_outputs);
  const called = type.call
    ? await type.call(node, { ctx, case: nodeCaseOf(before), vars, seq: step.seq })
    : undefined;
  return applyStep(ctx, job, claim, async () => wf, { attributes, called: { value: called } });
}
