import type { CreatedAt, JsonDefault, UpdatedAt } from "../../platform/db/schema.js";

export interface CustomerAttributesTable {
  tenant_id: string;
  external_customer_id: string;
  attributes: JsonDefault<Record<string, string | number | boolean>>;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

/** Row types of this module's tables, added to the platform's Database type below. */
export interface AttributesTables {
  customer_attributes: CustomerAttributesTable;
}

declare module "../../platform/db/schema.js" {
  interface Database extends AttributesTables {}
}
