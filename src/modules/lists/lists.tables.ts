import type { ColumnType, Generated } from "kysely";
import type { CreatedAt } from "../../platform/db/schema.js";

export interface ListsTable {
  list_key: Generated<number>;
  tenant_id: string;
  list_id: string;
  description: Generated<string>;
  normalize: Generated<string>;
  value_count: Generated<number>;
  created_at: CreatedAt;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface ListValuesTable {
  list_key: number;
  value: string;
}

/** Row types of the lists module's tables. */
export interface ListsTables {
  lists: ListsTable;
  list_values: ListValuesTable;
}

declare module "../../platform/db/schema.js" {
  interface Database extends ListsTables {}
}
