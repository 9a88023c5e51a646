import { feature } from "../../platform/app-types.js";
import { casesAdminRoutes } from "./cases.admin.routes.js";
import { casesCli } from "./cases.cli.js";
import { casesRoutes } from "./cases.routes.js";

export const casesModule = feature("cases", {
  tables: ["cases", "case_comments", "review_slas", "case_filters"],
  routes(app, ctx) {
    casesRoutes(app, ctx);
    casesAdminRoutes(app, ctx);
  },
  cli: casesCli,
});

export {
  /** The event of a case that failed (`case.failed`, contract section 2). */
  caseFailedEvent,
  /** The event of a decision (decided, pending review, overridden), with the spec's fields. */
  decisionEvent,
  /** The `result` of a case event: the decision, its history and the workflow's result. */
  type ResultEnvelope,
} from "./case-events.js";
export {
  /** The statuses a review deadline applies to (in review, waiting). */
  AWAITING_STATUSES,
  /** The filters of the "All cases" view. */
  type CaseFilters,
  /** A position in the "All cases" view (newest first). */
  type CaseKeyset,
  /** A case as the "All cases" view lists it. */
  type CaseListRow,
  /** A position in a list of cases by due date. */
  type DueKeyset,
  /** A case of a list by due date, with its due time. */
  type DueListRow,
  /** One page of the tenant's cases, every status, filtered, newest first, after a keyset position. */
  listCases,
  /** One page of the tenant's cases by due date, the most overdue first, then those without a deadline. */
  listCasesByDue,
  /** One page newest first filtered by a tag, reading at most SCAN_LIMIT cases (it says where it stopped). */
  listCasesScanned,
  /** How many cases a page filtered by a tag (the queue's, All cases') reads at most. */
  SCAN_LIMIT,
} from "./case-search.repo.js";
export {
  /** Closes a case for good */
  closeCase,
  /** An analyst's override */
  overrideDecision,
} from "./cases.admin.service.js";
export {
  /** How far a case's acceptance time may lie before the start of the transaction inserting it. */
  ACCEPTED_LAG_SECONDS,
  /** What `findCaseFacts` gives. */
  type CaseFacts,
  /** A row of the cases table, as the cases module reads it. */
  type CaseRow,
  /** A case's new state after a step, as the engine writes it with the other cases of its batch. */
  type CaseStateWrite,
  /** Whether the tenant has this case, without reading it. */
  caseExists,
  /** The update of a batch of cases' states, as one part of a larger statement */
  caseStatesUpdate,
  /** The ids of the tenant's cases whose current decision is this one (a subquery). */
  casesDecided,
  /** The tenant's cases of a workflow accepted in a window, dry runs left out (a subquery). */
  casesOfWorkflow,
  /** Whether new cases wait to be started: live work is queued (a backtest waits then). */
  casesWaitingToStart,
  /** Claims cases waiting to start, oldest first: counts a run of each and leases them, committed before the run */
  claimReceivedCases,
  /** The tenant's case, or undefined for an unknown id, a malformed id or another tenant's case. */
  findCase,
  /** The tenant's case as other modules need it (tenant, type, status, dry run), or undefined. */
  findCaseFacts,
  /** The tenant's cases of these ids (unknown ids left out). */
  findCases,
  /** The tenant owning a case, for operator routes that address a case by id alone. */
  findCaseTenant,
  /** Whether a case whose run began and never finished waits to be claimed again. */
  hasReceivedCaseToRunAgain,
  /** Reads and locks the case for the rest of the transaction */
  lockCase,
  /** Reads and locks the cases (the engine's batches). */
  lockCases,
  /** Locks the cases a starter claimed, those still waiting to start at the claim's count. */
  lockClaimedCases,
  /** Gives back cases inserted claimed for a starter that stops before running them. */
  releaseClaimedCases,
  /** What a new case's insert notifies on the jobs channel, so that idle starters wake at once. */
  START_NOTIFICATION,
  /** Writes some columns of one of the tenant's cases. */
  updateCase,
} from "./cases.repo.js";
export {
  /** A case as `GET /cases` lists it (the schema, for other lists of cases). */
  CaseSummary,
  /** The types of a subject's identifiers. */
  IDENTIFIER_TYPES,
} from "./cases.schemas.js";
export {
  /** A case as the statement that accepts it sees it (for `onCaseAccepted`). */
  type AcceptedCase,
  /** What other features add to a case record: its tags, its information requests, its trace. */
  type CaseRecordParts,
  /** The cases module's seam as a process's features make it (see `CaseRecordParts`). */
  caseSeamOf,
  /** What a feature adds to the steps of a case's trace. */
  type TraceNotes,
} from "./cases.seam.js";
export {
  /** A case as the partner API shows it (GET /cases/{caseId}). */
  type CaseRecordView,
  /** Runs a case submission on any version of a workflow as a dry run (the operator API's, the console's). */
  dryRunCase,
  /** A case of the tenant as the partner API shows it; 404 for an unknown or another tenant's case. */
  getCase,
  /** The tenant's cases of some ids as `GET /cases` lists them, in the order of the ids. */
  getCaseSummaries,
  /** Every problem of a case submission (structure and the workflow's input schema), for a dry run. */
  submissionProblems,
} from "./cases.service.js";
export {
  /** Adds an internal comment to a case, with its audit row. */
  addComment,
  /** Gives cases an owner or none (analysts take and release their own; admins assign any). */
  assignCases,
  /** An internal comment as the console shows it. */
  type CommentView,
  /** The tenant's saved filters of the "All cases" view. */
  getCaseFilters,
  /** A case's internal comments, oldest first (never in the partner's case record). */
  getComments,
  /** The tenant's review deadlines, in hours by case type. */
  getReviewSlas,
  /** Whether a worker may act on a case of this owner (analysts: their own and nobody's; admins: any). */
  mayWork,
  /** Deletes a saved filter (its author or an admin). */
  removeCaseFilter,
  /** 409 when another analyst owns the case (an admin acts on any); 404 for another tenant's. */
  requireWork,
  /** Saves a filter of the "All cases" view under a name. */
  saveCaseFilter,
  /** Sets the tenant's review deadlines by case type. */
  setReviewSlas,
  /** Who acts on cases: the actor's label, the user, and whether they may act for others. */
  type Worker,
} from "./casework.service.js";
export {
  /** How many cases each tab of the review queue holds, counted up to a cap. */
  countQueue,
  /** One page of the review queue: one status, oldest first, filtered, after a keyset position. */
  listQueue,
  /** The statuses the review queue shows, in the order of its tabs. */
  QUEUE_STATUSES,
  /** The filters of the review queue. */
  type QueueFilters,
  /** A case as the review queue lists it. */
  type QueueRow,
  /** One of QUEUE_STATUSES. */
  type QueueStatus,
} from "./review-queue.repo.js";
/** The starter's side of the hand-off of new cases from its process's API (decision 0028). */
/** A case a starter claimed, with the runs of it begun. */
export type { StartClaim, StartTaker } from "./start-handoff.js";
