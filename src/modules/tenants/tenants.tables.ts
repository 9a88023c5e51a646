import type { CreatedAt } from "../../platform/db/schema.js";

export interface TenantsTable {
  id: string;
  name: string;
  created_at: CreatedAt;
}

/** Row types of the tenants module's tables. */
export interface TenantsTables {
  tenants: TenantsTable;
}

declare module "../../platform/db/schema.js" {
  interface Database extends TenantsTables {}
}
