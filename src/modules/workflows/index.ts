import { feature } from "../../platform/app-types.js";
import { workflowsCli } from "./workflows.cli.js";
import { workflowsRoutes } from "./workflows.routes.js";

export const workflowsModule = feature("workflows", {
  tables: ["workflows", "workflow_versions"],
  routes: workflowsRoutes,
  cli: workflowsCli,
});

/** The trace in words, one line per fact, each node as its node type describes it. */
export { describeTrace } from "./describe-trace.js";
/** Evaluates an expression on a thread under a deadline (decision 0024); a tenant's evaluations there. */
export {
  evaluateOnThread,
  pendingOnThreads,
  /** Sets how far below the process's CPU priority evaluation threads run (`CDS_EVALUATION_NICENESS`). */
  setEvaluationNiceness,
  waitingForThreads,
} from "./evaluation-threads.js";
/** The catalogue of node types a process runs workflows with, built from the features' lists. */
export {
  /** A compiled node: its id, its type, and whatever its node type compiled it to. */
  type CompiledNode,
  /** The `when` conditions of a list of clauses (`rules`, `cases`). */
  clauseConditions,
  /** The common lines of every trace entry in words: failed, waiting, or where it went on. */
  describeEnd,
  /** Per-type facts of a trace entry. */
  type Explanation,
  /** The references held by plain fields (`next`, `onTimeout`…) that name a node. */
  fieldReferences,
  /** Whether a value is a plain JSON object (not an array, not null). */
  isJsonObject,
  /** A JSON object, as node definitions and outputs are. */
  type JsonObject,
  /** The entries of a map of named expressions (`output`, `payload`). */
  mapExpressions,
  /** The case as a node sees it. */
  type NodeCase,
  /** A node whose expressions gave something it cannot use */
  NodeEvaluationError,
  /** One expression of a node definition: where it is, its source, what it must give. */
  type NodeExpression,
  /** What a node's `evaluate` is given: the case, its variables, the step's transaction… */
  type NodeInput,
  /** What evaluating a node decided: go on, pause, decide, or fail. */
  type NodeOutcome,
  /** A field of a node that names the node to go on with. */
  type NodeReference,
  /** What a backtest gives a node it replays: the node's own record in the past case. */
  type NodeReplay,
  /** A node type of the workflow language, whole */
  type NodeType,
  NodeTypes,
  /** A paused node's wait as its node type sees it when it resumes. */
  type OpenWait,
  /** A step of a past case, as a backtest replays a node from it. */
  type RecordedStep,
  /** A replayed node needs an input the past case never had: its replay ends there. */
  ReplayNeedsInput,
  /** Where a resumed node goes: on, to a failure, or it keeps waiting. */
  type ResumeOutcome,
  /** A `$ref` to a shared definition of the workflow schema. */
  schemaRef,
  /** One entry of a case's trace, as `GET /admin/cases/{caseId}` shows it. */
  type TraceEntry,
  /** How a wait was resolved */
  type WaitResolution,
} from "./node-type.js";
/** A version compiled for the engine: its nodes, their node types, its payload check. */
export type { CompiledWorkflow } from "./workflow.compiler.js";
export {
  /** Parses and type-checks a CEL condition once, for a node's `when`. */
  compileCondition,
  /** Parses and type-checks a node's `output` map of CEL expressions once. */
  compileOutput,
  /** An expression that must give a string (an information request's `to`, `subject`, `body`). */
  compileText,
  /** What an expression must produce where it stands (`value`, `string`, `condition`). */
  type ExpressionKind,
  /** What a list id must match. */
  LIST_ID_PATTERN,
  /** The `inList` answers of one node evaluation, filled by the engine between attempts. */
  ListLookups,
  /** An evaluation that read list answers not known yet: look them up and evaluate again. */
  LookupsNeeded,
  /** An expression evaluated on a thread and its result. */
  type OffloadEntry,
  /** The expressions of one node evaluation evaluated on a thread, and the one that asks to be. */
  Offloads,
  /** Sets the units one node evaluation may spend in this process (`CDS_EVALUATION_BUDGET`). */
  setEvaluationBudget,
  /** An evaluation that passed its allowance on the event loop: evaluate on a thread and again. */
  ThreadNeeded,
  /** An expression handed over to a thread, with the budget it had and the nodes it saw. */
  type WantedExpression,
  /** Gives the expressions evaluated with these variables the node's list answers. */
  withListLookups,
  /** Lets the expressions evaluated with these variables move to a thread. */
  withOffloads,
} from "./workflow.expressions.js";
export {
  /** A non-empty list of at most `max` objects with exactly these properties, each required. */
  clauses,
  /** The limits of the workflow language (nodes, rules, expression lengths, expiries). */
  LIMITS,
  /** What a provider id in a workflow definition must match. */
  PROVIDER_ID_PATTERN,
} from "./workflow.schema.js";
export {
  /** A boolean condition */
  type CompiledCondition,
  /** A CEL expression parsed and type-checked once, ready to evaluate. */
  type CompiledExpression,
  /** A map of named expressions, evaluated together into a plain object. */
  type CompiledOutput,
  /** An expression evaluation that failed at run time (a missing key, a type mismatch…). */
  ExpressionError,
  /** What expressions read. */
  type ExpressionVariables,
} from "./workflow.types.js";
/** Whether a version is its workflow's current one, as a condition for another module's statement. */
export { isCurrentVersion } from "./workflows.repo.js";
export {
  /** One `inList` question: is this value in the tenant's list? */
  type ListProbe,
  /** Where `inList` is answered: the tenant's named lists, brought by one feature. */
  type ListSource,
  /** The one list source among a process's features. */
  listSourceOf,
} from "./workflows.seam.js";
export {
  /** What a version needs of its tenant before it runs (node types' `checkTenant`, such as a provider node's… */
  checkTenantRequirements,
  /** Any existing version, published or not (dry runs, running cases) */
  getCompiledWorkflow,
  /** One version of a tenant's workflow, with its definition. */
  getVersion,
  /** The tenant's workflows with their versions. */
  getWorkflows,
  /** The lists the tenant's published versions read, each with the versions reading it. */
  listsInUse,
  /** Publishes a version and makes it current, in the audit log with its actor. */
  publishVersion,
  /** A version of the tenant's workflow, compiled: 404 for an unknown tenant, workflow or version. */
  requireVersion,
  /** The version a new case runs on, from what the process has seen, and whether its insert must confirm it. */
  resolveSubmissionTarget,
  /** The version a new case runs on (`POST /cases`) */
  resolveSubmissionWorkflow,
} from "./workflows.service.js";
