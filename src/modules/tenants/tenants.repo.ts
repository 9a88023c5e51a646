import type { Executor } from "../../platform/db/index.js";

export interface TenantRow {
  id: string;
  name: string;
  created_at: Date;
}

export function insertTenant(db: Executor, id: string, name: string): Promise<TenantRow> {
  return db
    .insertInto("tenants")
    .values({ id, name })
    .returning(["id", "name", "created_at"])
    .executeTakeFirstOrThrow();
}

export function listTenants(db: Executor): Promise<TenantRow[]> {
  return db
    .selectFrom("tenants")
    .select(["id", "name", "created_at"])
    .orderBy("created_at")
    .orderBy("id")
    .execute();
}

export function findTenant(db: Executor, tenantId: string): Promise<TenantRow | undefined> {
  return db
    .selectFrom("tenants")
    .select(["id", "name", "created_at"])
    .where("id", "=", tenantId)
    .executeTakeFirst();
}
