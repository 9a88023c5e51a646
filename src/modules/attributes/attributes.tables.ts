/** Row types of this feature's tables (joined into the Database type in modules/tables.ts). */
// biome-ignore lint/suspicious/noEmptyInterface: filled in as the feature's migrations add tables
export interface AttributesTables {}
