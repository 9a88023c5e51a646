import type { FeatureModule } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import type { JobHandler } from "../../platform/jobs.js";
import { deliveriesRoutes } from "./deliveries.routes.js";
import { deliveryHandler } from "./delivery.job.js";
import { webhookConfigsRoutes } from "./webhook-configs.routes.js";
import { webhooksCli } from "./webhooks.cli.js";

export {
  BlockedTargetError,
  checkTargetHost,
  guardedLookup,
  hostOf,
  isPrivateAddress,
} from "./target-safety.js";
export { sealStoredWebhookSecrets } from "./webhook-secrets.js";

/**
 * Webhook delivery runs on a worker of its own (see src/worker.ts), never on the general one:
 * its attempts wait on partners' endpoints, and must not take the slots of workflow steps.
 */
export function webhookDeliveryHandlers(ctx: AppContext): JobHandler[] {
  return [deliveryHandler(ctx)];
}

export const webhooksModule: FeatureModule = {
  name: "webhooks",
  routes: (app, ctx) => {
    webhookConfigsRoutes(app, ctx);
    deliveriesRoutes(app, ctx);
  },
  cli: webhooksCli,
};
