import type { ColumnType } from "kysely";
import type { CreatedAt, Json, Timestamp } from "../../platform/db/schema.js";

export interface CaseStepsTable {
  tenant_id: string;
  case_id: string;
  seq: number;
  node_id: string;
  node_type: string;
  /** `completed`, `waiting` (the node paused) or `failed`. */
  status: string;
  output: Json<unknown> | null;
  next_node_id: string | null;
  error: Json<Record<string, unknown>> | null;
  /** The node type's facts behind where the step went (`matched`, `score`, `contributions`…). */
  explain: Json<Record<string, unknown>> | null;
  created_at: CreatedAt;
  finished_at: Timestamp | null;
}

export interface CaseWaitsTable {
  id: string;
  tenant_id: string;
  case_id: string;
  seq: number;
  node_id: string;
  /** The node type's own kind of wait: `callback`, `rfi`, `provider`… */
  kind: string;
  /** What finds the wait again: a callback reference, an information request id, a vendor's id. */
  ref: string | null;
  provider_id: string | null;
  data: Json<Record<string, unknown>> | null;
  expires_at: Timestamp | null;
  resolved_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  /** How the wait ended: `timeout`, `closed`, or what its node type reported (`callback`, `answered`…). */
  resolution: string | null;
  created_at: CreatedAt;
}

/** Row types of this module's tables, added to the platform's Database type below. */
export interface EngineTables {
  case_steps: CaseStepsTable;
  case_waits: CaseWaitsTable;
}

declare module "../../platform/db/schema.js" {
  interface Database extends EngineTables {}
}
