import type { Generated } from "kysely";
import type { CreatedAt, Json, Timestamp, UpdatedAt } from "../../platform/db/schema.js";
import type { Role } from "./roles.js";

export interface ConsoleUsersTable {
  id: string;
  tenant_id: string;
  email: string;
  name: string;
  role: Role;
  password_hash: string | null;
  setup_token_hash: Uint8Array | null;
  setup_expires_at: Timestamp | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface ConsoleSessionsTable {
  token_hash: Uint8Array;
  tenant_id: string;
  user_id: string;
  created_at: CreatedAt;
  last_seen_at: Timestamp;
  expires_at: Timestamp;
}

export interface ConsoleSigninFailuresTable {
  id: Generated<number>;
  email: string;
  address: string;
  at: CreatedAt;
}

export interface ConsoleAuditTable {
  id: Generated<number>;
  tenant_id: string;
  actor: string;
  action: string;
  target: string;
  before: Json<unknown> | null;
  after: Json<unknown> | null;
  at: CreatedAt;
}

/** Row types of this module's tables, added to the platform's Database type below. */
export interface UsersTables {
  console_users: ConsoleUsersTable;
  console_sessions: ConsoleSessionsTable;
  console_signin_failures: ConsoleSigninFailuresTable;
  console_audit: ConsoleAuditTable;
}

declare module "../../platform/db/schema.js" {
  interface Database extends UsersTables {}
}
