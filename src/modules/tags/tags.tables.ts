import type { Generated } from "kysely";
import type { CreatedAt, UpdatedAt } from "../../platform/db/schema.js";

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

/** Row types of the tags module's tables. */
export interface TagsTables {
  tag_options: TagOptionsTable;
  case_tags: CaseTagsTable;
}

declare module "../../platform/db/schema.js" {
  interface Database extends TagsTables {}
}
