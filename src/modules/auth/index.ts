import type { FeatureModule } from "../../platform/app-types.js";
import { apiKeysCli } from "./api-keys.cli.js";
import { apiKeysRoutes } from "./api-keys.routes.js";

export const authModule: FeatureModule = { name: "auth", routes: apiKeysRoutes, cli: apiKeysCli };
