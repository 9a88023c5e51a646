import type { FeatureModule } from "../../platform/app-types.js";
import { workflowsCli } from "./workflows.cli.js";
import { workflowsRoutes } from "./workflows.routes.js";

export const workflowsModule: FeatureModule = {
  name: "workflows",
  routes: workflowsRoutes,
  cli: workflowsCli,
};

/** The catalogue of node types a process runs workflows with, built from the features' lists. */
export {
  /** The common lines of every trace entry in words: failed, waiting, or where it went on. */
  describeEnd,
  /** The references held by plain fields (`next`, `onTimeout`…) that name a node. */
  fieldReferences,
  /** Whether a value is a plain JSON object (not an array, not null). */
  isJsonObject,
  /** A JSON object, as node definitions and outputs are. */
  type JsonObject,
  /** The case as a node sees it. */
  type NodeCase,
  /** A node type of the workflow language, whole */
  type NodeType,
  NodeTypes,
  /** A `$ref` to a shared definition of the workflow schema. */
  schemaRef,
} from "./node-type.js";
/** A version compiled for the engine: its nodes, their node types, its payload check. */
export type { CompiledWorkflow } from "./workflow.compiler.js";
export {
  /** What a provider id in a workflow definition must match. */
  PROVIDER_ID_PATTERN,
} from "./workflow.schema.js";
export {
  /** One version of a tenant's workflow, with its definition. */
  getVersion,
  /** The tenant's workflows with their versions. */
  getWorkflows,
} from "./workflows.service.js";
