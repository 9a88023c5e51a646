import type { FeatureModule } from "../../platform/app-types.js";
import { apiKeysCli } from "./api-keys.cli.js";
import { apiKeysRoutes } from "./api-keys.routes.js";
import { installAuth } from "./auth.plugin.js";

/** API keys and the authentication of every request (keys, the operator token, scopes). */
export const authModule: FeatureModule = {
  name: "auth",
  install: installAuth,
  routes: apiKeysRoutes,
  cli: apiKeysCli,
};
