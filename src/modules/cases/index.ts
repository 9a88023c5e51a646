import type { FeatureModule } from "../../platform/app-types.js";
import { casesAdminRoutes } from "./cases.admin.routes.js";
import { casesCli } from "./cases.cli.js";
import { casesRoutes } from "./cases.routes.js";

export const casesModule: FeatureModule = {
  name: "cases",
  tables: ["cases"],
  routes(app, ctx) {
    casesRoutes(app, ctx);
    casesAdminRoutes(app, ctx);
  },
  cli: casesCli,
};

export {
  /** Closes a case for good */
  closeCase,
  /** An analyst's override */
  overrideDecision,
} from "./cases.admin.service.js";
export {
  /** Whether the tenant has this case, without reading it. */
  caseExists,
  /** The tenant's case, or undefined for an unknown id, a malformed id or another tenant's case. */
  findCase,
} from "./cases.repo.js";
export {
  /** A case as the partner API shows it (GET /cases/{caseId}). */
  type CaseRecordView,
  /** A case of the tenant as the partner API shows it; 404 for an unknown or another tenant's case. */
  getCase,
} from "./cases.service.js";
