/**
 * The vocabulary every module speaks about a case: its types, statuses, decisions and where a
 * decision came from. It imports no module, so that the workflow language, the engine, the
 * cases module and the features around them can share it without importing each other.
 */
export {
  /** Every status a case can be in, in lifecycle order. */
  CASE_STATUSES,
  /** The case types of the spec: KYC, KYB, Transaction. */
  CASE_TYPES,
  /** One of CASE_STATUSES. */
  type CaseStatus,
  /** One of CASE_TYPES. */
  type CaseType,
  /** Who decided: the workflow, a risk evaluation, or an analyst. */
  DECISION_SOURCES,
  /** The decisions a case can end in: approved, declined, in_review. */
  DECISION_VALUES,
  /** A decision with its source, actor, time and reason, as stored and shown. */
  type DecisionEntry,
  /** One of DECISION_SOURCES. */
  type DecisionSource,
  /** One of DECISION_VALUES. */
  type DecisionValue,
  /** Whether a value is one of CASE_STATUSES. */
  isCaseStatus,
  /** Whether a case in this status still moves on its own (received, running, waiting). */
  isInFlight,
  /** Whether a case in this status is finished for good (closed, failed). */
  isTerminal,
} from "./case-status.js";
export {
  /** A decision as every answer and webhook shows it, as a schema. */
  Decision,
} from "./decision.schema.js";
export {
  /** A document attached to an information request's answer, as a schema. */
  DocumentSchema,
  /** The value of an answered field: text, number, boolean or null, as a schema. */
  FieldValueSchema,
  /** An information request as the case record and the RFI endpoints show it, as a schema. */
  InformationRequestSchema,
} from "./information-request.schema.js";
