import type { FeatureModule } from "../../platform/app-types.js";
import { providerConfigsRoutes } from "./provider-configs.routes.js";
import { providersCli } from "./providers.cli.js";

/** Verification providers (brokers): configurations, vendor calls, inbound events, the simulators. */
export const providersModule: FeatureModule = {
  name: "providers",
  routes: (app, ctx) => {
    providerConfigsRoutes(app, ctx);
  },
  cli: providersCli,
};
