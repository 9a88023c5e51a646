import { SCOPES, type Scope } from "../../src/modules/auth/scopes.js";
import type { CaseStatus } from "../../src/modules/case-model/case-status.js";
import { insertCase } from "../../src/modules/cases/cases.repo.js";
import type { App } from "../../src/platform/app-types.js";
import type { AppContext } from "../../src/platform/context.js";
import { uuid } from "../../src/platform/crypto.js";
import { ADMIN_TOKEN } from "./app.js";

export const adminHeaders = { authorization: `Bearer ${ADMIN_TOKEN}` };

export interface Partner {
  tenantId: string;
  keyId: string;
  key: string;
  headers: { "x-api-key": string };
}

export async function createTenant(app: App, name = "Acme Bank"): Promise<string> {
  const res = await app.inject({
    method: "POST",
    url: "/admin/tenants",
    headers: adminHeaders,
    payload: { name },
  });
  if (res.statusCode !== 201) throw new Error(`creating a tenant answered ${res.statusCode}: ${res.body}`);
  return res.json().tenantId;
}

export async function createKey(
  app: App,
  tenantId: string,
  scopes: readonly Scope[] = SCOPES,
  extra: Record<string, unknown> = {},
): Promise<Partner> {
  const res = await app.inject({
    method: "POST",
    url: `/admin/tenants/${tenantId}/api-keys`,
    headers: adminHeaders,
    payload: { name: "test key", scopes, ...extra },
  });
  if (res.statusCode !== 201) throw new Error(`creating a key answered ${res.statusCode}: ${res.body}`);
  const body = res.json();
  return { tenantId, keyId: body.keyId, key: body.key, headers: { "x-api-key": body.key } };
}

/** A fresh tenant with one key holding the given scopes (all by default). */
export async function createPartner(app: App, scopes: readonly Scope[] = SCOPES): Promise<Partner> {
  return createKey(app, await createTenant(app), scopes);
}

export async function enableTags(app: App, tenantId: string, ...tags: string[]): Promise<void> {
  for (const tag of tags) {
    const res = await app.inject({
      method: "PUT",
      url: `/admin/tenants/${tenantId}/tag-options/${encodeURIComponent(tag)}`,
      headers: adminHeaders,
      payload: { enabled: true },
    });
    if (res.statusCode !== 200)
      throw new Error(`enabling tag ${tag} answered ${res.statusCode}: ${res.body}`);
  }
}

/** A case written straight through the cases repository, for features that only need one to exist. */
export async function createStoredCase(
  ctx: Pick<AppContext, "db">,
  tenantId: string,
  status: CaseStatus = "received",
): Promise<string> {
  const row = await insertCase(ctx.db.root, {
    id: uuid(),
    tenantId,
    requestId: uuid(),
    status,
    type: "KYC",
    workflowId: "kyc",
    workflowVersion: 1,
    subject: { person: { firstName: "Ada", lastName: "Lovelace" } },
    payload: {},
    metadata: {},
    externalCustomerId: null,
    eventTimestamp: null,
    idempotencyKey: null,
    dryRun: false,
  });
  return row.id;
}
