import { feature } from "../../platform/app-types.js";
import type { JobHandler } from "../../platform/jobs.js";
import { actionsRoutes } from "./actions.routes.js";
import { providerNode } from "./provider.node.js";
import { providerConfigsRoutes } from "./provider-configs.routes.js";
import { providerTraceNotes } from "./provider-trace.js";
import { providersCli } from "./providers.cli.js";
import { providersConsole } from "./providers.console.js";
import { vendorEventsRoutes } from "./vendor-events.routes.js";
import { handleVendorEvent, VENDOR_EVENT_JOB, type VendorEventJob } from "./vendor-events.service.js";
import { vendorPollHandler } from "./vendor-poll.job.js";

/**
 * Verification providers (brokers, contract section 5): the `provider` node, pending and durable
 * actions (endpoints 5 to 7), operator configuration, vendors' inbound events, the simulators,
 * and the analysts' review of screening hits (remembered per entity) with the console's pages.
 */
export const providersModule = feature("providers", {
  tables: [
    "provider_configs",
    "provider_runs",
    "provider_calls",
    "provider_events",
    "screening_reviews",
    "provider_actions",
  ],
  console: providersConsole,
  nodeTypes: [providerNode],
  traceNotes: providerTraceNotes,
  async routes(app, ctx) {
    actionsRoutes(app, ctx);
    providerConfigsRoutes(app, ctx);
    await vendorEventsRoutes(app, ctx);
  },
  jobs(ctx): JobHandler[] {
    return [
      {
        kind: VENDOR_EVENT_JOB,
        mode: "transaction",
        run: (job, tx) => handleVendorEvent(ctx, tx, job.payload as unknown as VendorEventJob),
      },
      vendorPollHandler(ctx),
    ];
  },
  cli: providersCli,
});
