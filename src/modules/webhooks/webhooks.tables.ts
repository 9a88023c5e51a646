import type { Generated } from "kysely";
import type { CreatedAt, Json, Timestamp, UpdatedAt } from "../../platform/db/schema.js";

export interface EventsTable {
  id: string;
  tenant_id: string;
  case_id: string | null;
  event_type: string;
  webhook_key: string | null;
  payload: Json<Record<string, unknown>>;
  created_at: CreatedAt;
}

export interface WebhookSecret {
  id: string;
  secret: string;
}

export interface WebhookConfigsTable {
  tenant_id: string;
  webhook_key: string;
  url: string;
  secrets: Json<WebhookSecret[]>;
  /** False only for rows stored before secrets were sealed, until the next start seals them. */
  secrets_sealed: Generated<boolean>;
  active_secret_id: string | null;
  max_attempts: number;
  timeout_ms: number;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export type DeliveryStatus = "pending" | "succeeded" | "failed";

export interface WebhookDeliveriesTable {
  id: string;
  seq: Generated<number>;
  tenant_id: string;
  event_id: string;
  case_id: string | null;
  event_type: string;
  webhook_key: string;
  webhook_id: string;
  body: string;
  status: Generated<DeliveryStatus>;
  attempt_count: Generated<number>;
  recorded_attempts: Generated<number>;
  next_attempt_at: Timestamp | null;
  last_attempt_at: Timestamp | null;
  last_status_code: number | null;
  last_error: string | null;
  claims: Generated<number>;
  /** The lease of a first attempt handed to its inserting process's worker (open while claims = 0). */
  handed_until: Timestamp | null;
  last_target: string | null;
  last_secret_id: string | null;
  last_latency_ms: number | null;
  last_response_body: string | null;
  redelivery_of: string | null;
  superseded_by: string | null;
  created_at: CreatedAt;
  completed_at: Timestamp | null;
}

export interface WebhookAttemptsTable {
  delivery_id: string;
  attempt: number;
  tenant_id: string;
  started_at: Timestamp;
  target: string | null;
  secret_id: string | null;
  status_code: number | null;
  latency_ms: number | null;
  error: string | null;
  response_body: string | null;
}

/** A batch of deliveries one worker claimed: entry i is claim turns[i] of deliveries[i]. */
export interface WebhookClaimsTable {
  id: string;
  lease_until: Timestamp;
  deliveries: string[];
  turns: number[];
}

/** Row types of this module's tables, added to the platform's Database type below. */
export interface WebhooksTables {
  /**
   * Every event (a view, decision 0034): each delivered event's first delivery, and the rows of
   * `recorded_events`. Read only.
   */
  events: EventsTable;
  /** The events that have no delivery (a dry run's), and every event written before migration 0030. */
  recorded_events: EventsTable;
  webhook_configs: WebhookConfigsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  /** Claims of the delivery workers: open attempts, counted before they are sent. */
  webhook_claims: WebhookClaimsTable;
}

declare module "../../platform/db/schema.js" {
  interface Database extends WebhooksTables {}
}
