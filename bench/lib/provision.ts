import { SCOPES, type Scope } from "../../src/modules/auth/scopes.js";
import type { CaseStatus } from "../../src/modules/case-model/case-status.js";
import { insertCase } from "../../src/modules/cases/cases.repo.js";
import { uuid } from "../../src/platform/crypto.js";
import type { Db } from "../../src/platform/db/index.js";

export interface PartnerOptions {
  name?: string;
  /** Default: every scope. */
  scopes?: readonly Scope[];
  /** Default null: unlimited, so that the rate limit never shapes a measurement. */
  rateLimit?: { perSecond: number; burst: number } | null;
  /** Tag options to enable in the tenant's vocabulary. */
  tags?: string[];
}

export interface Partner {
  tenantId: string;
  keyId: string;
  key: string;
  /** `{ "x-api-key": key }`, ready for a request. */
  headers: Record<string, string>;
}

type Admin = <T>(method: string, path: string, body?: unknown) => Promise<T>;

/** Provisions a partner through the operator API, as an operator would. */
export async function provisionPartner(admin: Admin, options: PartnerOptions = {}): Promise<Partner> {
  const tenant = await admin<{ tenantId: string }>("POST", "/admin/tenants", {
    name: options.name ?? "Bench Bank",
  });
  const key = await admin<{ keyId: string; key: string }>(
    "POST",
    `/admin/tenants/${tenant.tenantId}/api-keys`,
    {
      name: "bench",
      scopes: options.scopes ?? SCOPES,
      rateLimit: options.rateLimit === undefined ? null : options.rateLimit,
    },
  );
  for (const tag of options.tags ?? []) {
    await admin("PUT", `/admin/tenants/${tenant.tenantId}/tag-options/${encodeURIComponent(tag)}`, {
      enabled: true,
    });
  }
  return { tenantId: tenant.tenantId, keyId: key.keyId, key: key.key, headers: { "x-api-key": key.key } };
}

/**
 * A case written straight through the cases repository, for scenarios that need one to exist
 * without running a workflow (tags, webhook events, information requests).
 */
export async function insertStoredCase(db: Db, tenantId: string, status: CaseStatus): Promise<string> {
  const row = await insertCase(db.root, {
    id: uuid(),
    tenantId,
    requestId: uuid(),
    status,
    type: "KYC",
    workflowId: "bench",
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
