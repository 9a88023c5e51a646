import type { AppContext } from "../../platform/context.js";
import { randomBase62 } from "../../platform/crypto.js";
import { AppError, badRequest, type ErrorDetail, notFound } from "../../platform/errors.js";
import { type SecretBox, secretBoxOf } from "../../platform/secret-box.js";
import { requireTenant } from "../tenants/index.js";
import { insertAudit } from "../users/index.js";
import { MAX_TARGET_URL_LENGTH, targetProblem } from "../webhooks/index.js";
import type { Broker } from "./broker.js";
import { problemsOf } from "./broker-schemas.js";
import { brokerOf } from "./brokers/index.js";
import {
  deleteProviderConfig,
  findProviderConfig,
  listProviderConfigs,
  type ProviderConfigRow,
  upsertProviderConfig,
} from "./providers.repo.js";

export const DEFAULT_VENDOR_TIMEOUT_MS = 10_000;
const MIN_WEBHOOK_SECRET = 8;

export interface ProviderConfigInput {
  baseUrl: string;
  credentials: Record<string, unknown>;
  webhookSecret?: string;
  timeoutMs?: number;
}

export interface ProviderConfigView {
  brokerId: string;
  baseUrl: string;
  inboundWebhookUrl: string;
  /** Whether a secret verifies the vendor's webhooks (the value is never shown). */
  webhookSecretSet: boolean;
  timeoutMs: number;
  configuredAt: string;
}

/** A configuration opened for use: what a vendor call needs. */
export interface OpenedConfig {
  brokerId: string;
  baseUrl: string;
  credentials: Record<string, unknown>;
  webhookSecret: string | null;
  timeoutMs: number;
}

const credentialsPurpose = (tenantId: string, brokerId: string) =>
  `provider-credentials:${tenantId}:${brokerId}`;
const webhookSecretPurpose = (tenantId: string, brokerId: string) =>
  `provider-webhook-secret:${tenantId}:${brokerId}`;

export function inboundWebhookUrl(
  ctx: AppContext,
  row: Pick<ProviderConfigRow, "broker_id" | "inbound_token">,
): string {
  return `${ctx.config.publicUrl}/providers/${row.broker_id}/webhooks/${row.inbound_token}`;
}

function toView(ctx: AppContext, row: ProviderConfigRow): ProviderConfigView {
  return {
    brokerId: row.broker_id,
    baseUrl: row.base_url,
    inboundWebhookUrl: inboundWebhookUrl(ctx, row),
    webhookSecretSet: row.webhook_secret_sealed !== null,
    timeoutMs: row.timeout_ms,
    configuredAt: row.updated_at.toISOString(),
  };
}

/** The broker of a path's `brokerId`; an unknown one is 404 like any unknown resource. */
export function requireBroker(brokerId: string): Broker {
  const broker = brokerOf(brokerId);
  if (!broker) throw notFound(`broker "${brokerId}"`);
  return broker;
}

/** The base URL's problems: form first, then (unless private targets are allowed) where it resolves. */
async function baseUrlProblems(ctx: AppContext, raw: string): Promise<string[]> {
  if (raw.length > MAX_TARGET_URL_LENGTH) return [`must be at most ${MAX_TARGET_URL_LENGTH} characters`];
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return ["is not a valid absolute URL"];
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return ["must be an http or https URL"];
  if (ctx.config.env === "production" && url.protocol !== "https:")
    return ["must be an https URL in production"];
  if (url.username || url.password) return ["must not carry credentials; they go in `credentials`"];
  if (url.search || url.hash) return ["must not carry a query or a fragment"];
  const problem = await targetProblem(url, ctx.config.allowPrivateTargets);
  return problem ? [problem] : [];
}

/**
 * A configuration as its audit row records it: what a reader may see, never the credentials,
 * the webhook secret or the inbound URL's token.
 */
function audited(row: ProviderConfigRow) {
  return {
    baseUrl: row.base_url,
    timeoutMs: row.timeout_ms,
    webhookSecretSet: row.webhook_secret_sealed !== null,
  };
}

/**
 * Stores a broker's configuration, and its audit row (`provider.set`, by `actor`) in the same
 * transaction: what changed, with the credentials and the webhook secret said to be replaced or
 * kept, never their values.
 */
export async function putProviderConfig(
  ctx: AppContext,
  tenantId: string,
  brokerId: string,
  input: ProviderConfigInput,
  actor: string,
): Promise<ProviderConfigView> {
  await requireTenant(ctx.db.root, tenantId);
  const broker = requireBroker(brokerId);
  const details: ErrorDetail[] = [];
  const baseUrl = input.baseUrl.trim().replace(/\/+$/, "");
  for (const message of await baseUrlProblems(ctx, baseUrl)) details.push({ path: "baseUrl", message });
  details.push(...problemsOf(broker.credentialsSchema, input.credentials, "credentials"));
  const existing = await findProviderConfig(ctx.db.root, tenantId, brokerId);
  const box = secretBoxOf(ctx.config);
  let webhookSecretSealed: string | null = null;
  if (broker.webhookSecret === "none") {
    if (input.webhookSecret !== undefined) {
      details.push({
        path: "webhookSecret",
        message: `is not used by ${brokerId}, which sends no webhooks`,
      });
    }
  } else if (input.webhookSecret !== undefined) {
    if ([...input.webhookSecret].length < MIN_WEBHOOK_SECRET) {
      details.push({
        path: "webhookSecret",
        message: `must be at least ${MIN_WEBHOOK_SECRET} characters`,
      });
    } else webhookSecretSealed = box.seal(input.webhookSecret, webhookSecretPurpose(tenantId, brokerId));
  } else if (existing?.webhook_secret_sealed) {
    // Kept as stored: rotating credentials needs no new webhook secret.
    webhookSecretSealed = existing.webhook_secret_sealed;
  } else {
    details.push({
      path: "webhookSecret",
      message: `is required: ${brokerId} signs its webhooks with it`,
    });
  }
  if (details.length > 0) {
    throw badRequest(
      `invalid provider configuration: ${details.map((d) => `${d.path} ${d.message}`).join("; ")}`,
      details,
    );
  }
  const row = await ctx.db.transaction(async (tx) => {
    const before = await findProviderConfig(tx, tenantId, brokerId);
    const stored = await upsertProviderConfig(tx, tenantId, brokerId, {
      baseUrl,
      credentialsSealed: box.seal(JSON.stringify(input.credentials), credentialsPurpose(tenantId, brokerId)),
      webhookSecretSealed,
      inboundToken: randomBase62(32),
      timeoutMs: input.timeoutMs ?? DEFAULT_VENDOR_TIMEOUT_MS,
    });
    await insertAudit(tx, { tenantId, actor }, "provider.set", `provider:${brokerId}`, {
      before: before && audited(before),
      after: {
        ...audited(stored),
        credentials: "replaced",
        ...(webhookSecretSealed === null
          ? {}
          : { webhookSecret: input.webhookSecret === undefined ? "kept" : "replaced" }),
      },
    });
    return stored;
  });
  ctx.log.info({ tenantId, brokerId }, "provider configuration stored");
  return toView(ctx, row);
}

export async function getProviderConfigs(ctx: AppContext, tenantId: string): Promise<ProviderConfigView[]> {
  await requireTenant(ctx.db.root, tenantId);
  return (await listProviderConfigs(ctx.db.root, tenantId)).map((row) => toView(ctx, row));
}

export async function getProviderConfig(
  ctx: AppContext,
  tenantId: string,
  brokerId: string,
): Promise<ProviderConfigView> {
  await requireTenant(ctx.db.root, tenantId);
  requireBroker(brokerId);
  const row = await findProviderConfig(ctx.db.root, tenantId, brokerId);
  if (!row) throw notFound("provider configuration");
  return toView(ctx, row);
}

/**
 * Removes a configuration, with its audit row (`provider.delete`) in the same transaction. Workflow
 * versions naming the broker can no longer be published; runs still paused on it fail their next
 * vendor call, and its inbound URL answers 404.
 */
export async function removeProviderConfig(
  ctx: AppContext,
  tenantId: string,
  brokerId: string,
  actor: string,
): Promise<void> {
  await requireTenant(ctx.db.root, tenantId);
  requireBroker(brokerId);
  await ctx.db.transaction(async (tx) => {
    const before = await findProviderConfig(tx, tenantId, brokerId);
    if (!before || !(await deleteProviderConfig(tx, tenantId, brokerId)))
      throw notFound("provider configuration");
    await insertAudit(tx, { tenantId, actor }, "provider.delete", `provider:${brokerId}`, {
      before: audited(before),
    });
  });
  ctx.log.info({ tenantId, brokerId }, "provider configuration deleted");
}

export function openConfig(box: SecretBox, row: ProviderConfigRow): OpenedConfig {
  const tenantId = row.tenant_id;
  return {
    brokerId: row.broker_id,
    baseUrl: row.base_url,
    credentials: JSON.parse(box.open(row.credentials_sealed, credentialsPurpose(tenantId, row.broker_id))),
    webhookSecret:
      row.webhook_secret_sealed === null
        ? null
        : box.open(row.webhook_secret_sealed, webhookSecretPurpose(tenantId, row.broker_id)),
    timeoutMs: row.timeout_ms,
  };
}

/** The tenant's configuration of a broker, opened; a missing one is a provider failure (502). */
export async function requireOpenedConfig(
  ctx: AppContext,
  tenantId: string,
  brokerId: string,
): Promise<OpenedConfig> {
  const row = await findProviderConfig(ctx.db.root, tenantId, brokerId);
  if (!row)
    throw new AppError("provider_failed", `the tenant has no configuration of the provider ${brokerId}`);
  return openConfig(secretBoxOf(ctx.config), row);
}
