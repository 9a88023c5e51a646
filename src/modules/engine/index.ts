import type { FeatureModule } from "../../platform/app-types.js";
import type { ClaimedJob, JobHandler } from "../../platform/jobs.js";
import { expireCallbackWait } from "./callbacks.service.js";
import { engineRoutes } from "./engine.routes.js";
import { runSteps, STEP_BATCH, STEP_JOB, type StepPayload, WAIT_TIMEOUT_JOB } from "./engine.service.js";

export const engineModule: FeatureModule = {
  name: "engine",
  routes: engineRoutes,
  jobs(ctx): JobHandler[] {
    return [
      {
        kind: STEP_JOB,
        mode: "batch",
        batchSize: STEP_BATCH,
        run: (jobs, tx, claim) => runSteps(ctx, tx, jobs as ClaimedJob<StepPayload>[], claim),
      },
      {
        kind: WAIT_TIMEOUT_JOB,
        mode: "transaction",
        run: (job, tx) =>
          expireCallbackWait(tx, job.payload as { tenantId: string; caseId: string; waitId: string }),
      },
    ];
  },
};
