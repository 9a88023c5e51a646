import { type Selectable, sql } from "kysely";
import type { Executor } from "../../platform/db/index.js";
import type { WebhookConfigsTable, WebhookSecret } from "./webhooks.tables.js";

export type WebhookConfigRow = Selectable<WebhookConfigsTable>;

export interface WebhookConfigValues {
  url: string;
  secrets: WebhookSecret[];
  /** Whether `secrets` hold sealed values (webhook-secrets.ts); the service always seals them. */
  secretsSealed: boolean;
  activeSecretId: string | null;
  maxAttempts: number;
  timeoutMs: number;
}

export function findWebhookConfig(
  db: Executor,
  tenantId: string,
  webhookKey: string,
): Promise<WebhookConfigRow | undefined> {
  return db
    .selectFrom("webhook_configs")
    .selectAll()
    .where("tenant_id", "=", tenantId)
    .where("webhook_key", "=", webhookKey)
    .executeTakeFirst();
}

export function upsertWebhookConfig(
  db: Executor,
  tenantId: string,
  webhookKey: string,
  values: WebhookConfigValues,
): Promise<WebhookConfigRow> {
  const columns = {
    url: values.url,
    secrets: JSON.stringify(values.secrets),
    secrets_sealed: values.secretsSealed,
    active_secret_id: values.activeSecretId,
    max_attempts: values.maxAttempts,
    timeout_ms: values.timeoutMs,
  };
  return db
    .insertInto("webhook_configs")
    .values({ tenant_id: tenantId, webhook_key: webhookKey, ...columns })
    .onConflict((oc) =>
      oc.columns(["tenant_id", "webhook_key"]).doUpdateSet({ ...columns, updated_at: sql<Date>`now()` }),
    )
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function listWebhookConfigs(db: Executor, tenantId: string): Promise<WebhookConfigRow[]> {
  return db
    .selectFrom("webhook_configs")
    .selectAll()
    .where("tenant_id", "=", tenantId)
    .orderBy("webhook_key")
    .execute();
}

export async function deleteWebhookConfig(
  db: Executor,
  tenantId: string,
  webhookKey: string,
): Promise<boolean> {
  const result = await db
    .deleteFrom("webhook_configs")
    .where("tenant_id", "=", tenantId)
    .where("webhook_key", "=", webhookKey)
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** Whether the tenant has a webhook configuration of this key. */
export async function webhookKeyExists(db: Executor, tenantId: string, webhookKey: string): Promise<boolean> {
  const row = await db
    .selectFrom("webhook_configs")
    .select("webhook_key")
    .where("tenant_id", "=", tenantId)
    .where("webhook_key", "=", webhookKey)
    .executeTakeFirst();
  return row !== undefined;
}
