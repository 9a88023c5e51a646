import type { AppContext } from "../../platform/context.js";
import type { InSameTransaction } from "../../platform/db/index.js";
import { emitEvent } from "./events.js";
import { getWebhookConfig } from "./webhook-configs.service.js";

/**
 * Sends `webhook.test` to one configuration, through the outbox like any event: signed, retried,
 * and in the delivery log, so that a partner can check their endpoint and its signature check.
 */
export async function sendTestEvent(
  ctx: AppContext,
  tenantId: string,
  webhookKey: string,
  also?: InSameTransaction<string>,
): Promise<string> {
  await getWebhookConfig(ctx, tenantId, webhookKey);
  return ctx.db.transaction(async (tx) => {
    const eventId = await emitEvent(tx, {
      tenantId,
      caseId: null,
      type: "webhook.test",
      webhookKey,
      dryRun: false,
      payload: {
        event_type: "webhook.test",
        tenant_id: tenantId,
        webhook_key: webhookKey,
        timestamp: new Date().toISOString(),
      },
    });
    await also?.(tx, eventId);
    return eventId;
  });
}
