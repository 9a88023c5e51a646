import type { ColumnType, Generated } from "kysely";
import type { CreatedAt, Json, Timestamp, UpdatedAt } from "../../platform/db/schema.js";

export type RfiStatus = "pending" | "answered" | "expired" | "cancelled";
export type RfiSource = "api" | "analyst" | "workflow";
export type AnswerSource = "rfi_response" | "analyst";

/** One answered field, in the order the answer sent it. */
export interface StoredField {
  key: string;
  value: string | number | boolean | null;
  label?: string;
}

export interface InformationRequestsTable {
  id: string;
  tenant_id: string;
  case_id: string;
  status: RfiStatus;
  source: RfiSource;
  requested_by: string;
  node_id: string | null;
  recipient: string;
  cc: string[] | null;
  subject: string;
  body: string;
  template_id: string | null;
  webhook_key: string | null;
  awaits_response: Generated<boolean>;
  expires_at: Timestamp | null;
  slots_minted: Generated<number>;
  reminder_count: Generated<number>;
  last_reminded_at: Timestamp | null;
  answered_at: Timestamp | null;
  answered_by: string | null;
  answer_source: AnswerSource | null;
  answer_fields: Json<StoredField[]> | null;
  cancelled_at: Timestamp | null;
  cancelled_by: string | null;
  expired_at: Timestamp | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface RfiUploadSlotsTable {
  id: string;
  tenant_id: string;
  case_id: string;
  rfi_id: string;
  object_key: string;
  filename: string;
  content_type: string;
  size_bytes: number;
  expires_at: ColumnType<Date, Date | string, Date | string>;
  attached_at: Timestamp | null;
  /** The stored object's version tag when it was attached (S3's ETag); null on the disk store. */
  etag: ColumnType<string | null, string | null | undefined, string | null>;
  position: number | null;
  label: string | null;
  created_at: CreatedAt;
}

export interface RfiCaseUploadBudgetsTable {
  case_id: string;
  tenant_id: string;
  slots_minted: number;
}

/** Row types of this module's tables, added to the platform's Database type below. */
export interface RfiTables {
  information_requests: InformationRequestsTable;
  rfi_upload_slots: RfiUploadSlotsTable;
  rfi_case_upload_budgets: RfiCaseUploadBudgetsTable;
}

declare module "../../platform/db/schema.js" {
  interface Database extends RfiTables {}
}
