import {
  deleteRows,
  type Executor,
  findRow,
  findRows,
  type Row,
  upsertRow,
} from "../../platform/db/index.js";
import type { WebhookSecret } from "./webhooks.tables.js";

export type WebhookConfigRow = Row<"webhook_configs">;

export interface WebhookConfigValues {
  url: string;
  secrets: WebhookSecret[];
  /** Whether `secrets` hold sealed values (webhook-secrets.ts); the service always seals them. */
  secretsSealed: boolean;
  activeSecretId: string | null;
  maxAttempts: number;
  timeoutMs: number;
}

export function findWebhookConfig(db: Executor, tenantId: string, webhookKey: string) {
  return findRow(db, "webhook_configs", { tenant_id: tenantId, webhook_key: webhookKey });
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
  return upsertRow(db, "webhook_configs", { tenant_id: tenantId, webhook_key: webhookKey }, columns);
}

export function listWebhookConfigs(db: Executor, tenantId: string): Promise<WebhookConfigRow[]> {
  return findRows(db, "webhook_configs", { tenant_id: tenantId }, ["webhook_key"]);
}

export async function deleteWebhookConfig(
  db: Executor,
  tenantId: string,
  webhookKey: string,
): Promise<boolean> {
  return (await deleteRows(db, "webhook_configs", { tenant_id: tenantId, webhook_key: webhookKey })) > 0;
}

/** Whether the tenant has a webhook configuration of this key. */
export async function webhookKeyExists(db: Executor, tenantId: string, webhookKey: string): Promise<boolean> {
  return (await findWebhookConfig(db, tenantId, webhookKey)) !== undefined;
}
