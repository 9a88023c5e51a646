import type { Generated } from "kysely";
import type { Timestamp } from "../../platform/db/schema.js";

export interface EntitiesTable {
  id: string;
  tenant_id: string;
  type: string;
  value: string;
  first_seen_at: Timestamp;
}

export interface CaseEntitiesTable {
  case_id: string;
  entity_id: string;
  tenant_id: string;
  entity_type: string;
  role: string;
  case_time: Timestamp;
  accepted_at: Generated<Date>;
  case_type: string;
  amount: number | null;
  currency: string | null;
  /** The case's other entities as `entity_peer` gives them; NULL past PEERS_MAX_KEYS keys. */
  peers: string[] | null;
}

/** Row types of the entities module's tables. */
export interface EntitiesTables {
  entities: EntitiesTable;
  case_entities: CaseEntitiesTable;
}

declare module "../../platform/db/schema.js" {
  interface Database extends EntitiesTables {}
}
