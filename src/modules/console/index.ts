import type { FeatureModule } from "../../platform/app-types.js";
import { authRoutes } from "./auth.routes.js";
import { consoleScope } from "./console.plugin.js";

/** The console at /console: the screens of a tenant's analysts and admins (contract section 6). */
export const consoleModule: FeatureModule = {
  name: "console",
  routes: (app, ctx) =>
    consoleScope(app, ctx, (scope) => {
      authRoutes(scope, ctx);
    }),
};
