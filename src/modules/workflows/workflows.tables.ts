import type { CreatedAt, Json, Timestamp, UpdatedAt } from "../../platform/db/schema.js";

/** Row types of this module's tables, added to the platform's Database type below. */
export interface WorkflowsTables {
  workflows: WorkflowsTable;
  workflow_versions: WorkflowVersionsTable;
}

export interface WorkflowsTable {
  tenant_id: string;
  workflow_id: string;
  /** The number the last created version took; the next one takes this plus one. */
  latest_version: number;
  /** The version new cases use when they pin none: the one published last. */
  current_version: number | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface WorkflowVersionsTable {
  tenant_id: string;
  workflow_id: string;
  version: number;
  definition: Json<unknown>;
  created_at: CreatedAt;
  published_at: Timestamp | null;
}

declare module "../../platform/db/schema.js" {
  interface Database extends WorkflowsTables {}
}
