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
}

/** Row types of the cases module's tables. */
export interface CasesTables {
  cases: CasesTable;
}

declare module "../../platform/db/schema.js" {
  interface Database extends CasesTables {}
}
