import type { FeatureModule } from "../../platform/app-types.js";
import { casesAdminRoutes } from "./cases.admin.routes.js";
import { casesCli } from "./cases.cli.js";
import { casesRoutes } from "./cases.routes.js";

export const casesModule: FeatureModule = {
  name: "cases",
  routes(app, ctx) {
    casesRoutes(app, ctx);
    casesAdminRoutes(app, ctx);
  },
  cli: casesCli,
};
