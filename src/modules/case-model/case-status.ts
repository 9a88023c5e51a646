/** The statuses of a case (contract section 2), a closed union checked by the helpers below. */
export const CASE_STATUSES = [
  "received",
  "running",
  "waiting",
  "in_review",
  "decided",
  "failed",
  "closed",
] as const;

export type CaseStatus = (typeof CASE_STATUSES)[number];

export const CASE_TYPES = ["KYC", "KYB", "Transaction"] as const;
export type CaseType = (typeof CASE_TYPES)[number];

export const DECISION_VALUES = ["approved", "declined", "in_review"] as const;
export type DecisionValue = (typeof DECISION_VALUES)[number];

export const DECISION_SOURCES = ["workflow", "risk_evaluation", "analyst"] as const;
export type DecisionSource = (typeof DECISION_SOURCES)[number];

/** `failed` and `closed` end a case: nothing more happens to it. */
export function isTerminal(status: CaseStatus): boolean {
  switch (status) {
    case "failed":
    case "closed":
      return true;
    case "received":
    case "running":
    case "waiting":
    case "in_review":
    case "decided":
      return false;
  }
}

/** Whether the workflow is still at work on the case (it may yet reach a decision). */
export function isInFlight(status: CaseStatus): boolean {
  switch (status) {
    case "received":
    case "running":
    case "waiting":
      return true;
    case "in_review":
    case "decided":
    case "failed":
    case "closed":
      return false;
  }
}

export function isCaseStatus(value: string): value is CaseStatus {
  return (CASE_STATUSES as readonly string[]).includes(value);
}

/** One entry of `result.decisionHistory`; the last one is `result.decision`. */
export interface DecisionEntry {
  value: DecisionValue;
  source: DecisionSource;
  actor: string;
  decidedAt: string;
  reason?: string;
}
