import type { Generated } from "kysely";
import type { CreatedAt, Json, Timestamp } from "../../platform/db/schema.js";

export type BacktestStatus = "running" | "completed" | "cancelled" | "failed";

export interface BacktestsTable {
  id: string;
  tenant_id: string;
  workflow_id: string;
  version: number;
  window_from: Timestamp;
  window_to: Timestamp;
  case_type: string | null;
  sample: number | null;
  status: BacktestStatus;
  /** Null until the backtest's job has chosen its cases. */
  total: number | null;
  done: Generated<number>;
  summary: Json<StoredSummary>;
  error: string | null;
  created_at: CreatedAt;
  finished_at: Timestamp | null;
}

/** The summary as it is kept: counts by key, added to batch by batch. */
export interface StoredSummary {
  decisions: Record<string, Record<string, number>>;
  changed: number;
  unchanged: number;
  needsInput: number;
  errors: number;
  /** By node id: how many cases reached it on the candidate, and how many when they ran. */
  nodes: Record<string, { reached: number; reachedBefore: number }>;
}

export interface BacktestCasesTable {
  backtest_id: string;
  ordinal: number;
  tenant_id: string;
  case_id: string;
  /** Null until replayed. */
  changed: boolean | null;
  before: Json<Record<string, unknown>> | null;
  after: Json<Record<string, unknown>> | null;
}

/** Row types of the backtests module's tables. */
export interface BacktestsTables {
  backtests: BacktestsTable;
  backtest_cases: BacktestCasesTable;
}

declare module "../../platform/db/schema.js" {
  interface Database extends BacktestsTables {}
}
