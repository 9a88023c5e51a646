import type { FeatureModule } from "../../platform/app-types.js";
import { workflowsCli } from "./workflows.cli.js";
import { workflowsRoutes } from "./workflows.routes.js";

export const workflowsModule: FeatureModule = {
  name: "workflows",
  routes: workflowsRoutes,
  cli: workflowsCli,
};
