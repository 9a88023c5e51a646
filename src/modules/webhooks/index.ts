import { feature } from "../../platform/app-types.js";
import { secretBoxOf } from "../../platform/secret-box.js";
import { deliveriesRoutes } from "./deliveries.routes.js";
import { DeliveryWorker } from "./delivery-worker.js";
import { webhookConfigsRoutes } from "./webhook-configs.routes.js";
import { webhooksSection } from "./webhook-events.schemas.js";
import { sealStoredWebhookSecrets } from "./webhook-secrets.js";
import { webhooksCli } from "./webhooks.cli.js";

export {
  /** The refusal of a host with a non-public address (CDS_ALLOW_PRIVATE_TARGETS off). */
  BlockedTargetError,
  /** Refuses a host any of whose addresses is not public. */
  checkTargetHost,
  /** A `lookup` for `http.request` that connects only to the address it checked. */
  guardedLookup,
  /** The hostname of a URL without IPv6 brackets. */
  hostOf,
  /** True for an IP address outside the public internet, in any spelling. */
  isPrivateAddress,
  /** The longest URL the service calls out to. */
  MAX_TARGET_URL_LENGTH,
  /** Why the service may not call a URL's host (non-public, or not resolving), or undefined. */
  targetProblem,
} from "./target-safety.js";

/** Seals webhook signing secrets stored before they were sealed; the number of configurations. */
export { sealStoredWebhookSecrets };

/** Webhook endpoints, their secrets, delivery of events and its log. */
export const webhooksModule = feature("webhooks", {
  tables: [
    "webhook_configs",
    "events",
    "recorded_events",
    "webhook_deliveries",
    "webhook_attempts",
    "webhook_claims",
  ],
  openapi: { webhooks: webhooksSection },
  // Delivery runs on a worker of its own, never on the general one: its attempts wait on
  // partners' endpoints, and must not take the slots of workflow steps. Its queue is the pending
  // deliveries themselves (decision 0007).
  background: (ctx, options) => [new DeliveryWorker(ctx, options)],
  async startup({ db, config, note }) {
    const sealed = await sealStoredWebhookSecrets(db, secretBoxOf(config));
    if (sealed > 0) note("webhook signing secrets sealed", { configurations: sealed });
  },
  routes: (app, ctx) => {
    webhookConfigsRoutes(app, ctx);
    deliveriesRoutes(app, ctx);
  },
  cli: webhooksCli,
});

export {
  /** A webhook delivery with its attempts, as the delivery log shows it. */
  type DeliveryView,
  /** A tenant's deliveries, newest first, each with its attempts. */
  getDeliveries,
  /** One delivery with its attempts and the exact body every attempt sent. */
  getDelivery,
  /** Sends a delivery's event again as a new delivery with a fresh webhookId (the receiver sees a new delivery,… */
  redeliver,
} from "./deliveries.service.js";
export {
  /** The event types of the spec's Events section, `case.failed` and `webhook.test`. */
  EVENT_TYPES,
  /** What the caller's own statement writes the events with (the engine's steps statement). */
  type EventsWrite,
  /** One of EVENT_TYPES. */
  type EventType,
  /** Records one event in the outbox, with its first webhook delivery, in the caller's transaction. */
  emitEvent,
  /** `emitEvent` for many events in one statement. */
  emitEvents,
  /** `emitEvents` as a part of the caller's statement. */
  eventsWrite,
  /** An event to record: its type, case, webhook configuration and payload. */
  type NewEvent,
} from "./events.js";
/** Whether the tenant has a webhook configuration of this key. */
export { webhookKeyExists } from "./webhook-configs.repo.js";
export {
  /** The tenant's webhook configurations, secrets never shown. */
  getWebhookConfigs,
  /** Creates or replaces a webhook configuration. */
  putWebhookConfig,
  /** Removes a configuration. */
  removeWebhookConfig,
  /** What a webhook configuration's key must match. */
  WEBHOOK_KEY_PATTERN,
  /** A webhook configuration as the operator API shows it. */
  type WebhookConfigView,
  /** The audit rows of a configuration's changes (secrets' ids, never their values). */
  webhookAudit,
} from "./webhook-configs.service.js";
export {
  /** Sends `webhook.test` to one configuration, through the outbox like any event */
  sendTestEvent,
} from "./webhook-test.service.js";
