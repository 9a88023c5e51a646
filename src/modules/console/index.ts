import type { FeatureModule } from "../../platform/app-types.js";
import { auditRoutes } from "./audit.routes.js";
import { authRoutes } from "./auth.routes.js";
import { caseRoutes } from "./case.routes.js";
import { consoleScope } from "./console.plugin.js";
import { queueRoutes } from "./queue.routes.js";
import { settingsRoutes } from "./settings.routes.js";

/** The console at /console: the screens of a tenant's analysts and admins (contract section 6). */
export const consoleModule: FeatureModule = {
  name: "console",
  routes: (app, ctx) =>
    consoleScope(app, ctx, (scope) => {
      authRoutes(scope, ctx);
      queueRoutes(scope, ctx);
      caseRoutes(scope, ctx);
      auditRoutes(scope, ctx);
      settingsRoutes(scope, ctx);
    }),
};
