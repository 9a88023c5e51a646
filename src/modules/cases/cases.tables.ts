import type { Generated } from "kysely";
import type { CreatedAt, Json, JsonDefault, Timestamp, UpdatedAt } from "../../platform/db/schema.js";
import type { DecisionEntry } from "../case-model/index.js";

export interface CasesTable {
  id: string;
  tenant_id: string;
  request_id: string;
  status: string;
  type: string;
  workflow_id: string;
  workflow_version: number;
  subject: Json<Record<string, unknown>>;
  payload: Json<Record<string, unknown>>;
  metadata: JsonDefault<Record<string, unknown>>;
  external_customer_id: string | null;
  event_timestamp: Timestamp | null;
  idempotency_key: string | null;
  dry_run: Generated<boolean>;
  decision: Json<DecisionEntry> | null;
  decision_history: JsonDefault<DecisionEntry[]>;
  workflow_result: Json<Record<string, unknown>> | null;
  error: Json<Record<string, unknown>> | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
  // added by 0003_engine
  current_node_id: string | null;
  step_seq: Generated<number>;
  node_outputs: JsonDefault<Record<string, unknown>>;
  closed_at: Timestamp | null;
  closed_by: string | null;
  // added by cases/0014_casework
  assignee_id: string | null;
  assigned_at: Timestamp | null;
  // added by cases/0013_case_start_attempts
  /** Runs of the case from `received` begun by a starter; a run that commits moves it on. */
  start_attempts: Generated<number>;
  /** Until when the starter that counted the last run holds it before running it. */
  start_claimed_until: Timestamp | null;
}

/** An internal comment on a case, between the tenant's analysts. */
export interface CaseCommentsTable {
  id: string;
  tenant_id: string;
  case_id: string;
  author: string;
  body: string;
  created_at: CreatedAt;
}

/** How many hours a case of a type may wait for review. */
export interface ReviewSlasTable {
  tenant_id: string;
  case_type: string;
  hours: number;
  updated_at: UpdatedAt;
}

/** A saved filter of the "All cases" view (its query string), shared by the tenant's users. */
export interface CaseFiltersTable {
  id: string;
  tenant_id: string;
  name: string;
  query: string;
  created_by: string;
  created_at: CreatedAt;
}

/** Row types of the cases module's tables. */
export interface CasesTables {
  cases: CasesTable;
  case_comments: CaseCommentsTable;
  review_slas: ReviewSlasTable;
  case_filters: CaseFiltersTable;
}

declare module "../../platform/db/schema.js" {
  interface Database extends CasesTables {}
}
