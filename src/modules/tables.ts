import type { FoundationTables } from "../platform/db/schema.js";
import type { AttributesTables } from "./attributes/attributes.tables.js";
import type { EngineTables } from "./engine/engine.tables.js";
import type { ProvidersTables } from "./providers/providers.tables.js";
import type { RfiTables } from "./rfi/rfi.tables.js";
import type { UsersTables } from "./users/users.tables.js";
import type { WebhooksTables } from "./webhooks/webhooks.tables.js";
import type { WorkflowsTables } from "./workflows/workflows.tables.js";

/** Every table the service knows, joined from the platform's and each feature's own declarations. */
export interface Database
  extends FoundationTables,
    WorkflowsTables,
    EngineTables,
    WebhooksTables,
    RfiTables,
    AttributesTables,
    ProvidersTables,
    UsersTables {}
