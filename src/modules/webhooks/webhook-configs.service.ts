import type { AppContext } from "../../platform/context.js";
import type { InSameTransaction } from "../../platform/db/index.js";
import { badRequest, type ErrorDetail, notFound } from "../../platform/errors.js";
import { secretBoxOf } from "../../platform/secret-box.js";
import { requireTenant } from "../tenants/index.js";
import { type AuditBy, audited } from "../users/index.js";
import type { Redelivered, RedeliverFailedInput } from "./deliveries.service.js";
import { MAX_TARGET_URL_LENGTH, targetProblem } from "./target-safety.js";
import {
  deleteWebhookConfig,
  findWebhookConfig,
  listWebhookConfigs,
  upsertWebhookConfig,
  type WebhookConfigRow,
} from "./webhook-configs.repo.js";
import { openSecrets, sealSecrets } from "./webhook-secrets.js";
import type { WebhookSecret } from "./webhooks.tables.js";

export const WEBHOOK_KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
export const SECRET_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;
export const MIN_SECRET_LENGTH = 16;
export const MAX_SECRET_LENGTH = 512;
export const MAX_SECRETS = 10;
export const DEFAULT_MAX_ATTEMPTS = 5;
export const DEFAULT_TIMEOUT_MS = 10_000;
export const MAX_ATTEMPTS = 20;
export const MIN_TIMEOUT_MS = 100;
export const MAX_TIMEOUT_MS = 30_000;

export interface WebhookConfigInput {
  url: string;
  /**
   * `{id}` without a secret keeps the secret stored under that id (rotation without re-sending it).
   * Omitted, an endpoint keeps its stored secrets and the one that signs (a new URL alone).
   */
  secrets?: Array<{ id?: string; secret?: string }>;
  activeSecretId?: string | null;
  maxAttempts?: number;
  timeoutMs?: number;
}

export interface WebhookConfigView {
  webhookKey: string;
  url: string;
  /** The ids of the rotation set, never the values. */
  secrets: Array<{ id: string | null }>;
  activeSecretId: string | null;
  maxAttempts: number;
  timeoutMs: number;
  createdAt: string;
  updatedAt: string;
}

export function toConfigView(row: WebhookConfigRow): WebhookConfigView {
  return {
    webhookKey: row.webhook_key,
    url: row.url,
    secrets: row.secrets.map((s) => ({ id: s.id ?? null })),
    activeSecretId: row.active_secret_id,
    maxAttempts: row.max_attempts,
    timeoutMs: row.timeout_ms,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export function checkWebhookKey(webhookKey: string, path: string): void {
  if (!WEBHOOK_KEY_PATTERN.test(webhookKey)) {
    const message = "must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit";
    throw badRequest(`webhook key ${message}`, [{ path, message }]);
  }
}

/** Problems with the URL's form (protocol, credentials, length), without touching the network. */
function urlProblems(ctx: AppContext, raw: string): { url?: URL; problems: string[] } {
  if (raw.length > MAX_TARGET_URL_LENGTH) {
    return { problems: [`must be at most ${MAX_TARGET_URL_LENGTH} characters`] };
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { problems: ["is not a valid absolute URL"] };
  }
  const problems: string[] = [];
  if (url.protocol !== "https:" && url.protocol !== "http:") problems.push("must be an http or https URL");
  else if (ctx.config.env === "production" && url.protocol !== "https:") {
    problems.push("must be an https URL in production");
  }
  if (url.username || url.password) {
    problems.push("must not carry credentials; receivers authenticate webhooks by their signature");
  }
  if (!url.hostname) problems.push("must name a host");
  return { url, problems };
}

function secretsOf(
  input: WebhookConfigInput & Required<Pick<WebhookConfigInput, "secrets">>,
  stored: WebhookSecret[],
  details: ErrorDetail[],
): { secrets: WebhookSecret[]; activeSecretId: string | null } {
  const secrets: WebhookSecret[] = [];
  const seen = new Set<string>();
  const anonymous = input.secrets.length === 1 && input.secrets[0]?.id === undefined;
  input.secrets.forEach((entry, i) => {
    const path = `secrets[${i}]`;
    if (entry.id === undefined && !anonymous) {
      details.push({ path: `${path}.id`, message: "is required when there is more than one secret" });
      return;
    }
    if (entry.id !== undefined) {
      if (!SECRET_ID_PATTERN.test(entry.id)) {
        details.push({
          path: `${path}.id`,
          message: "must be 1 to 64 letters, digits, '.', '_', ':' or '-', starting with a letter or digit",
        });
        return;
      }
      if (seen.has(entry.id)) {
        details.push({ path: `${path}.id`, message: `repeats the id "${entry.id}"` });
        return;
      }
      seen.add(entry.id);
    }
    let secret = entry.secret;
    if (secret === undefined) {
      secret = stored.find((s) => entry.id !== undefined && s.id === entry.id)?.secret;
      if (secret === undefined) {
        details.push({
          path: `${path}.secret`,
          message: `is required: no secret is stored under the id "${entry.id ?? ""}" to keep`,
        });
        return;
      }
    } else if ([...secret].length < MIN_SECRET_LENGTH || [...secret].length > MAX_SECRET_LENGTH) {
      details.push({
        path: `${path}.secret`,
        message: `must be ${MIN_SECRET_LENGTH} to ${MAX_SECRET_LENGTH} characters`,
      });
      return;
    }
    // The one-secret form stores no id, and its attempts carry no X-Service-Secret-ID.
    secrets.push(entry.id === undefined ? ({ secret } as WebhookSecret) : { id: entry.id, secret });
  });

  const active = input.activeSecretId ?? null;
  if (anonymous) {
    if (active !== null) {
      details.push({ path: "activeSecretId", message: "names no secret: the one secret has no id" });
    }
  } else if (active === null) {
    details.push({ path: "activeSecretId", message: "is required: name the secret that signs" });
  } else if (!input.secrets.some((s) => s.id === active)) {
    details.push({ path: "activeSecretId", message: `"${active}" is not the id of one of the secrets` });
  }
  return { secrets, activeSecretId: anonymous ? null : active };
}

/**
 * The audit rows of a configuration's changes, whatever the door: the configuration as its view
 * shows it (the secrets' ids, never their values).
 */
export const webhookAudit = {
  set: (by: AuditBy, webhookKey: string) =>
    audited<{ before: WebhookConfigView | undefined; after: WebhookConfigView }>(
      by,
      "webhook.set",
      `webhook:${webhookKey}`,
      (change) => change,
    ),
  delete: (by: AuditBy, webhookKey: string) =>
    audited<WebhookConfigView>(by, "webhook.delete", `webhook:${webhookKey}`, (before) => ({ before })),
  /** A redelivery, by whoever `byOf` names in the delivery's tenant (learned in its transaction). */
  redeliver:
    (byOf: (tenantId: string) => AuditBy, deliveryId: string): InSameTransaction<Redelivered> =>
    (tx, r) =>
      audited<Redelivered>(byOf(r.tenantId), "webhook.redeliver", `delivery:${deliveryId}`, () => ({
        before: { status: r.status },
        after: { deliveryId: r.deliveryId, webhookId: r.webhookId },
      }))(tx, r),
  /** Failed deliveries redelivered together: the filters asked and how many (a call that found none writes nothing). */
  redeliverFailed: (by: AuditBy, filters: RedeliverFailedInput) =>
    audited<{ deliveryIds: string[] }>(by, "webhook.redeliver_failed", "webhooks", (r) => ({
      after: { ...filters, redelivered: r.deliveryIds.length },
    })),
};

export async function putWebhookConfig(
  ctx: AppContext,
  tenantId: string,
  webhookKey: string,
  input: WebhookConfigInput,
  also?: InSameTransaction<{ before: WebhookConfigView | undefined; after: WebhookConfigView }>,
): Promise<WebhookConfigView> {
  await requireTenant(ctx.db.root, tenantId);
  checkWebhookKey(webhookKey, "webhookKey");
  const details: ErrorDetail[] = [];
  const { url, problems } = urlProblems(ctx, input.url.trim());
  for (const message of problems) details.push({ path: "url", message });
  if (input.maxAttempts !== undefined && (input.maxAttempts < 1 || input.maxAttempts > MAX_ATTEMPTS)) {
    details.push({ path: "maxAttempts", message: `must be 1 to ${MAX_ATTEMPTS}` });
  }
  if (
    input.timeoutMs !== undefined &&
    (input.timeoutMs < MIN_TIMEOUT_MS || input.timeoutMs > MAX_TIMEOUT_MS)
  ) {
    details.push({ path: "timeoutMs", message: `must be ${MIN_TIMEOUT_MS} to ${MAX_TIMEOUT_MS}` });
  }
  const existing = await findWebhookConfig(ctx.db.root, tenantId, webhookKey);
  const box = secretBoxOf(ctx.config);
  const stored = existing
    ? openSecrets(box, tenantId, webhookKey, existing.secrets, existing.secrets_sealed)
    : [];
  if (input.secrets === undefined && !existing)
    details.push({ path: "secrets", message: "is required: a new endpoint needs a signing secret" });
  const { secrets, activeSecretId } = input.secrets
    ? secretsOf({ ...input, secrets: input.secrets }, stored, details)
    : { secrets: stored, activeSecretId: existing?.active_secret_id ?? null };
  if (url && problems.length === 0) {
    const problem = await targetProblem(url, ctx.config.allowPrivateTargets);
    if (problem) details.push({ path: "url", message: problem });
  }
  if (details.length > 0) {
    throw badRequest(
      `invalid webhook configuration: ${details.map((d) => `${d.path} ${d.message}`).join("; ")}`,
      details,
    );
  }
  const view = await ctx.db.transaction(async (tx) => {
    const row = await upsertWebhookConfig(tx, tenantId, webhookKey, {
      url: input.url.trim(),
      secrets: sealSecrets(box, tenantId, webhookKey, secrets),
      secretsSealed: true,
      activeSecretId,
      maxAttempts: input.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
      timeoutMs: input.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    });
    const after = toConfigView(row);
    await also?.(tx, { before: existing && toConfigView(existing), after });
    return after;
  });
  ctx.log.info({ tenantId, webhookKey, activeSecretId }, "webhook configuration stored");
  return view;
}

export async function getWebhookConfigs(ctx: AppContext, tenantId: string): Promise<WebhookConfigView[]> {
  await requireTenant(ctx.db.root, tenantId);
  return (await listWebhookConfigs(ctx.db.root, tenantId)).map(toConfigView);
}

export async function getWebhookConfig(
  ctx: AppContext,
  tenantId: string,
  webhookKey: string,
): Promise<WebhookConfigView> {
  await requireTenant(ctx.db.root, tenantId);
  const row = await findWebhookConfig(ctx.db.root, tenantId, webhookKey);
  if (!row) throw notFound("webhook configuration");
  return toConfigView(row);
}

/**
 * Removes a configuration. Deliveries still routed to it fail at their next attempt with a
 * reason naming the missing configuration, and can be redelivered once it exists again.
 */
export async function removeWebhookConfig(
  ctx: AppContext,
  tenantId: string,
  webhookKey: string,
  also?: InSameTransaction<WebhookConfigView>,
): Promise<void> {
  await requireTenant(ctx.db.root, tenantId);
  await ctx.db.transaction(async (tx) => {
    const before = also ? await findWebhookConfig(tx, tenantId, webhookKey) : undefined;
    if (!(await deleteWebhookConfig(tx, tenantId, webhookKey))) throw notFound("webhook configuration");
    if (also && before) await also(tx, toConfigView(before));
  });
  ctx.log.info({ tenantId, webhookKey }, "webhook configuration deleted");
}
