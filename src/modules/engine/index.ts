import type { FeatureModule } from "../../platform/app-types.js";
import type { JobHandler } from "../../platform/jobs.js";
import { expireCallbackWait } from "./callbacks.service.js";
import { engineRoutes } from "./engine.routes.js";
import { runStep, STEP_JOB, type StepPayload, WAIT_TIMEOUT_JOB } from "./engine.service.js";

export const engineModule: FeatureModule = {
  name: "engine",
  routes: engineRoutes,
  jobs(ctx): JobHandler[] {
    return [
      {
        kind: STEP_JOB,
        mode: "transaction",
        run: (job, tx, claim) => runStep(ctx, tx, job.payload as StepPayload, claim),
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
