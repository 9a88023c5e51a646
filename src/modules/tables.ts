import type { FoundationTables } from "../platform/db/schema.js";

/** Every table the service knows, joined from the platform's and each feature's own declarations. */
export interface Database extends FoundationTables {}
