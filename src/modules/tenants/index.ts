import { feature } from "../../platform/app-types.js";
import { tenantsCli } from "./tenants.cli.js";
import { tenantsRoutes } from "./tenants.routes.js";

export const tenantsModule = feature("tenants", {
  tables: ["tenants"],
  routes: tenantsRoutes,
  cli: tenantsCli,
});

export {
  /** The tenant, or a 404 for an unknown (or malformed) id. */
  requireTenant,
} from "./tenants.service.js";
