import type { ColumnType, Generated } from "kysely";
import type { DecisionEntry } from "../../modules/cases/case-status.js";

/**
 * Row types of the foundation tables, as Kysely sees them. Feature modules declare their own
 * tables in `<feature>.tables.ts` and the `Database` type in `./index.ts` joins them.
 */
export type Timestamp = ColumnType<Date, Date | string, Date | string>;
export type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
export type UpdatedAt = ColumnType<Date, Date | string | undefined, Date | string>;
/** JSON columns are written as text (see `json()`), so both drivers serialize them the same way. */
export type Json<T> = ColumnType<T, string, string>;
export type JsonDefault<T> = ColumnType<T, string | undefined, string>;

export interface TenantsTable {
  id: string;
  name: string;
  created_at: CreatedAt;
}

export interface ApiKeysTable {
  id: string;
  tenant_id: string;
  name: string;
  key_hash: Uint8Array;
  key_hint: string;
  scopes: string[];
  rate_limit_per_second: number | null;
  rate_limit_burst: number | null;
  created_at: CreatedAt;
  last_used_at: Timestamp | null;
  expires_at: Timestamp | null;
  deleted_at: Timestamp | null;
}

export interface JobsTable {
  id: Generated<number>;
  kind: string;
  payload: JsonDefault<Record<string, unknown>>;
  job_key: string | null;
  run_at: ColumnType<Date, Date | string | undefined, Date | string>;
  attempts: Generated<number>;
  max_attempts: Generated<number>;
  locked_by: string | null;
  locked_at: Timestamp | null;
  last_error: string | null;
  failed_at: Timestamp | null;
  created_at: CreatedAt;
}

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

export interface TagOptionsTable {
  tenant_id: string;
  tag: string;
  enabled: boolean;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface CaseTagsTable {
  id: Generated<number>;
  tenant_id: string;
  case_id: string;
  tag: string;
  created_by: string;
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

export interface EventsTable {
  id: string;
  tenant_id: string;
  case_id: string | null;
  event_type: string;
  webhook_key: string | null;
  payload: Json<Record<string, unknown>>;
  created_at: CreatedAt;
}

export interface ServiceSecretsTable {
  name: string;
  value: string;
  created_at: CreatedAt;
}

export interface SchemaMigrationsTable {
  version: number;
  name: string;
  checksum: string;
  applied_at: CreatedAt;
}

export interface FoundationTables {
  tenants: TenantsTable;
  api_keys: ApiKeysTable;
  jobs: JobsTable;
  cases: CasesTable;
  tag_options: TagOptionsTable;
  case_tags: CaseTagsTable;
  webhook_configs: WebhookConfigsTable;
  events: EventsTable;
  service_secrets: ServiceSecretsTable;
  schema_migrations: SchemaMigrationsTable;
}
