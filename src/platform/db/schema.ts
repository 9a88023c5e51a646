import type { ColumnType, Generated } from "kysely";

/**
 * Row types of the foundation tables, as Kysely sees them. Feature modules declare their own
 * tables in `<feature>.tables.ts` and the `Database` type in `./index.ts` joins them.
 */
export type Timestamp = ColumnType<Date, Date | string, Date | string>;
export type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
export type UpdatedAt = ColumnType<Date, Date | string | undefined, Date | string>;
/** JSON columns are written as text (see `json()`), so both drivers serialize them the same way. */
export type Json<T> = ColumnType<T, string, string>;
export type JsonDefault<T> = ColumnType<T, string | undefined, string>;

export interface JobsTable {
  id: Generated<number>;
  kind: string;
  payload: JsonDefault<Record<string, unknown>>;
  job_key: string | null;
  run_at: ColumnType<Date, Date | string | undefined, Date | string>;
  attempts: Generated<number>;
  max_attempts: Generated<number>;
  locked_by: string | null;
  locked_at: Timestamp | null;
  last_error: string | null;
  failed_at: Timestamp | null;
  created_at: CreatedAt;
}

export interface ServiceSecretsTable {
  name: string;
  value: string;
  created_at: CreatedAt;
}

export interface SchemaMigrationsTable {
  version: number;
  name: string;
  checksum: string;
  applied_at: CreatedAt;
}

/**
 * Every table the service knows. The platform declares its own here (jobs, secrets, migrations);
 * each module adds its tables from its own `<module>.tables.ts` by augmenting this interface, so
 * the platform never names a module.
 */
export interface Database {
  jobs: JobsTable;
  service_secrets: ServiceSecretsTable;
  schema_migrations: SchemaMigrationsTable;
}
