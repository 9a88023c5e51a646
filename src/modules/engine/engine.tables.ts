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
  created_at: CreatedAt;
  finished_at: Timestamp | null;
}

export interface CaseWaitsTable {
  id: string;
  tenant_id: string;
  case_id: string;
  seq: number;
  node_id: string;
  /** `callback`, `rfi` or `provider`. */
  kind: string;
  callback_ref: string | null;
  rfi_id: string | null;
  provider_id: string | null;
  expires_at: Timestamp | null;
  resolved_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  /** How the wait ended: `callback`, `timeout`, `answered`, `expired`, `cancelled`, `closed`. */
  resolution: string | null;
  created_at: CreatedAt;
}

/** Row types of the engine's tables (joined into the Database type in modules/tables.ts). */
export interface EngineTables {
  case_steps: CaseStepsTable;
  case_waits: CaseWaitsTable;
}
