import type { CreatedAt, Timestamp } from "../../platform/db/schema.js";

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

/** Row types of the auth module's tables. */
export interface AuthTables {
  api_keys: ApiKeysTable;
}

declare module "../../platform/db/schema.js" {
  interface Database extends AuthTables {}
}
