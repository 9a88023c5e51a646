import type { CreatedAt, JsonDefault, UpdatedAt } from "../../platform/db/schema.js";

export interface CustomerAttributesTable {
  tenant_id: string;
  external_customer_id: string;
  attributes: JsonDefault<Record<string, string | number | boolean>>;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

/** Row types of this feature's tables (joined into the Database type in modules/tables.ts). */
export interface AttributesTables {
  customer_attributes: CustomerAttributesTable;
}
