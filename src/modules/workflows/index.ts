import type { FeatureModule } from "../../platform/app-types.js";
import { workflowsCli } from "./workflows.cli.js";
import { workflowsRoutes } from "./workflows.routes.js";

export const workflowsModule: FeatureModule = {
  name: "workflows",
  routes: workflowsRoutes,
  cli: workflowsCli,
};

/** The catalogue of node types a process runs workflows with, built from the features' lists. */
export { NodeTypes } from "./node-type.js";

/** A version compiled for the engine: its nodes, their node types, its payload check. */
export type { CompiledWorkflow } from "./workflow.compiler.js";
