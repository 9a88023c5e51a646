import { feature } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import type { Tx } from "../../platform/db/index.js";
import type { ClaimedJob, JobHandler } from "../../platform/jobs.js";
import { CaseStarter } from "./case-starter.js";
import { resolveOpenWaitsOfCase } from "./engine.repo.js";
import { engineRoutes } from "./engine.routes.js";
import { runCallStep, runSteps } from "./engine.service.js";
import { runEvaluationStep } from "./evaluation-step.js";
import { engineNodeTypes } from "./nodes/index.js";
import { failStrandedCase, resumeWait, TIMEOUT } from "./resume.js";
import {
  CALL_JOB,
  EVALUATE_JOB,
  type EvaluationJobPayload,
  STEP_BATCH,
  STEP_JOB,
  type StepPayload,
  WAIT_TIMEOUT_JOB,
  type WaitTimeoutPayload,
} from "./step-jobs.js";
import { caseTrace } from "./trace.js";

export { findOpenWaitsByRef, type WaitLookup, type WaitRow } from "./engine.repo.js";
export type { ResumeResult } from "./resume.js";
export { failStrandedCase, resumeWait, TIMEOUT };

/** A step job whose attempts ran out fails its case instead of leaving it undecided. */
async function giveUpStep(ctx: AppContext, job: ClaimedJob, attempts: number, tx: Tx): Promise<void> {
  const step = job.payload as unknown as StepPayload;
  await failStrandedCase(
    ctx,
    tx,
    { tenantId: step.tenantId, caseId: step.caseId, nodeId: step.nodeId },
    `node ${step.nodeId}: the step could not be completed after ${attempts} attempts`,
  );
}

export const engineModule = feature("engine", {
  tables: ["case_steps", "case_waits"],
  nodeTypes: [...engineNodeTypes],
  background: (ctx) => [new CaseStarter(ctx)],
  caseRecord: { trace: caseTrace },
  // A closed case stops waiting: its callbacks, requests and vendors' results find nothing open.
  onCaseClosed: async (tx, tenantId, caseId) => {
    await resolveOpenWaitsOfCase(tx, tenantId, caseId, "closed");
  },
  routes: engineRoutes,
  jobs(ctx): JobHandler[] {
    return [
      {
        kind: STEP_JOB,
        mode: "batch",
        batchSize: STEP_BATCH,
        run: (jobs, tx, claim) => runSteps(ctx, tx, jobs as ClaimedJob<StepPayload>[], claim),
        onGiveUp: (job, _error, tx) => giveUpStep(ctx, job, job.attempt, tx),
      },
      {
        kind: CALL_JOB,
        mode: "plain",
        run: (job, _db, claim) => runCallStep(ctx, job as ClaimedJob<StepPayload>, claim),
        onGiveUp: (job, _error, tx) => giveUpStep(ctx, job, job.attempt, tx),
      },
      {
        kind: EVALUATE_JOB,
        mode: "plain",
        run: (job, _db, claim) => runEvaluationStep(ctx, job as ClaimedJob<EvaluationJobPayload>, claim),
        onGiveUp: (job, _error, tx) => giveUpStep(ctx, job, job.attempt, tx),
      },
      {
        kind: WAIT_TIMEOUT_JOB,
        mode: "transaction",
        async run(job, tx) {
          const { tenantId, caseId, waitId } = job.payload as unknown as WaitTimeoutPayload;
          await resumeWait(ctx, tx, { tenantId, caseId, waitId }, { kind: TIMEOUT });
        },
        async onGiveUp(job, _error, tx) {
          const { tenantId, caseId } = job.payload as unknown as WaitTimeoutPayload;
          await failStrandedCase(ctx, tx, { tenantId, caseId }, "the wait's timeout could not be applied");
        },
      },
    ];
  },
});

export {
  /** The nodes of the case paused on an external system, as their node types show them. */
  listPausedNodes,
  /** A node of a case paused on an external system, with its pending handle and actions. */
  type PausedNode,
} from "./callbacks.service.js";
export {
  /** An event a node emits about its case (`node.notification`, …), in the spec's camelCase. */
  nodeEvent,
} from "./nodes/node-event.js";
export {
  /** What a backtest made of one past case: before (the workflow's own decision and path) and after. */
  type Replayed,
  /** Replays past cases on a candidate version through the live node types, reading only. */
  replayCases,
} from "./replay.js";
export { caseTrace, type TraceEntry } from "./trace.js";
/** Runs new cases as they are accepted, each claimed from the cases table itself (decision 0011). */
export { CaseStarter };
