import type { Db } from "../../platform/db/index.js";
import type { SecretBox } from "../../platform/secret-box.js";
import type { WebhookSecret } from "./webhooks.tables.js";

/**
 * Webhook signing secrets are stored sealed (AES-256-GCM, see platform/secret-box.ts), each
 * bound to its tenant, configuration and id. Rows written before secrets were sealed say so
 * (`secrets_sealed` false) until `sealStoredWebhookSecrets` seals them at the next start.
 */
function purpose(tenantId: string, webhookKey: string, secretId: string | undefined): string {
  return `webhook-secret:${tenantId}:${webhookKey}:${secretId ?? ""}`;
}

export function sealSecrets(
  box: SecretBox,
  tenantId: string,
  webhookKey: string,
  secrets: WebhookSecret[],
): WebhookSecret[] {
  return secrets.map((s) => ({ ...s, secret: box.seal(s.secret, purpose(tenantId, webhookKey, s.id)) }));
}

export function openSecrets(
  box: SecretBox,
  tenantId: string,
  webhookKey: string,
  secrets: WebhookSecret[],
  sealed: boolean,
): WebhookSecret[] {
  if (!sealed) return secrets;
  return secrets.map((s) => ({ ...s, secret: box.open(s.secret, purpose(tenantId, webhookKey, s.id)) }));
}

/**
 * Seals the secrets of configurations stored before secrets were sealed; run at every start
 * after the migrations, a no-op once done. Each row is sealed only if it is still unsealed when
 * written, so processes starting together, or an operator changing the configuration meanwhile,
 * never lose a secret. Returns the number of configurations sealed.
 */
export async function sealStoredWebhookSecrets(db: Db, box: SecretBox): Promise<number> {
  const rows = await db.root
    .selectFrom("webhook_configs")
    .select(["tenant_id", "webhook_key", "secrets"])
    .where("secrets_sealed", "=", false)
    .execute();
  let sealed = 0;
  for (const row of rows) {
    const result = await db.root
      .updateTable("webhook_configs")
      .set({
        secrets: JSON.stringify(sealSecrets(box, row.tenant_id, row.webhook_key, row.secrets)),
        secrets_sealed: true,
      })
      .where("tenant_id", "=", row.tenant_id)
      .where("webhook_key", "=", row.webhook_key)
      .where("secrets_sealed", "=", false)
      .executeTakeFirst();
    sealed += Number(result.numUpdatedRows);
  }
  return sealed;
}
