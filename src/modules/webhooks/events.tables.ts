import type { CreatedAt, Json } from "../../platform/db/schema.js";

export interface EventsTable {
  id: string;
  tenant_id: string;
  case_id: string | null;
  event_type: string;
  webhook_key: string | null;
  payload: Json<Record<string, unknown>>;
  created_at: CreatedAt;
}

/** Row types of the events outbox, kept by the webhooks module with the deliveries it causes. */
export interface EventsTables {
  events: EventsTable;
}

declare module "../../platform/db/schema.js" {
  interface Database extends EventsTables {}
}
