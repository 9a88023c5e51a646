import type { AppContext } from "../../platform/context.js";
import { isUuid, uuid } from "../../platform/crypto.js";
import type { Executor } from "../../platform/db/index.js";
import { badRequest, notFound } from "../../platform/errors.js";
import { findTenant, insertTenant, listTenants, type TenantRow } from "./tenants.repo.js";

export interface TenantView {
  tenantId: string;
  name: string;
  createdAt: string;
}

export function toTenantView(row: TenantRow): TenantView {
  return { tenantId: row.id, name: row.name, createdAt: row.created_at.toISOString() };
}

export async function createTenant(ctx: AppContext, name: string): Promise<TenantView> {
  const trimmed = name.trim();
  if (trimmed.length === 0 || trimmed.length > 200) {
    throw badRequest("name must be 1 to 200 characters", [
      { path: "name", message: "must be 1 to 200 characters" },
    ]);
  }
  return toTenantView(await insertTenant(ctx.db.root, uuid(), trimmed));
}

export async function getTenants(ctx: AppContext): Promise<TenantView[]> {
  return (await listTenants(ctx.db.root)).map(toTenantView);
}

/** The tenant, or a 404 for an unknown (or malformed) id. */
export async function requireTenant(db: Executor, tenantId: string): Promise<TenantRow> {
  const tenant = isUuid(tenantId) ? await findTenant(db, tenantId) : undefined;
  if (!tenant) throw notFound("tenant");
  return tenant;
}
