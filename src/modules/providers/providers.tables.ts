import type { Generated } from "kysely";
import type { CreatedAt, Json, JsonDefault, Timestamp, UpdatedAt } from "../../platform/db/schema.js";

export interface ProviderConfigsTable {
  tenant_id: string;
  broker_id: string;
  base_url: string;
  credentials_sealed: string;
  webhook_secret_sealed: string | null;
  inbound_token: string;
  timeout_ms: number;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

/** `ended`: the run's wait was resolved by something else than the vendor (the case was closed or failed). */
export type RunStatus = "waiting" | "completed" | "failed" | "timed_out" | "ended";

export interface ProviderRunsTable {
  id: string;
  tenant_id: string;
  case_id: string;
  node_id: string;
  seq: number;
  broker_id: string;
  status: RunStatus;
  wait_id: string | null;
  expires_at: Timestamp | null;
  subject_ref: string | null;
  config: JsonDefault<Record<string, unknown>>;
  state: JsonDefault<Record<string, unknown>>;
  output: Json<Record<string, unknown>> | null;
  error: string | null;
  last_event_at: Timestamp | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export type CallOutcome = "ok" | "rejected" | "failed";

export interface ProviderCallsTable {
  id: Generated<number>;
  tenant_id: string;
  broker_id: string;
  case_id: string | null;
  run_id: string | null;
  action: string;
  actor: string;
  attempt: number;
  http_status: number | null;
  duration_ms: number;
  outcome: CallOutcome;
  error: string | null;
  created_at: CreatedAt;
}

export interface ProviderEventsTable {
  id: string;
  tenant_id: string;
  broker_id: string;
  digest: string;
  event_type: string;
  subject_ref: string | null;
  occurred_at: Timestamp | null;
  body: Json<Record<string, unknown>>;
  received_at: CreatedAt;
  handled_at: Timestamp | null;
  outcome: string | null;
}

/** An analyst's verdict on a screening hit (contract section 6). */
export type Verdict = "match" | "no_match";

export interface ScreeningReviewsTable {
  id: Generated<number>;
  tenant_id: string;
  case_id: string;
  entity_id: string | null;
  broker_id: string;
  hit_id: string;
  verdict: Verdict;
  reason: string;
  actor: string;
  hit: Json<Record<string, unknown>>;
  created_at: CreatedAt;
}

export interface ProviderActionsTable {
  id: Generated<number>;
  tenant_id: string;
  case_id: string;
  broker_id: string;
  run_id: string | null;
  kind: "pending" | "durable";
  action: string;
  actor: string;
  outcome: "ok" | "failed";
  output: Json<Record<string, unknown>> | null;
  error: string | null;
  created_at: CreatedAt;
}

/** Row types of this module's tables, added to the platform's Database type below. */
export interface ProvidersTables {
  provider_configs: ProviderConfigsTable;
  provider_runs: ProviderRunsTable;
  provider_calls: ProviderCallsTable;
  provider_events: ProviderEventsTable;
  screening_reviews: ScreeningReviewsTable;
  provider_actions: ProviderActionsTable;
}

declare module "../../platform/db/schema.js" {
  interface Database extends ProvidersTables {}
}
