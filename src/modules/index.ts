import type { FeatureModule } from "../platform/app-types.js";
import { authModule } from "./auth/index.js";
import { tagsModule } from "./tags/index.js";
import { tenantsModule } from "./tenants/index.js";

/** Every feature of the service, in the order their routes appear in the OpenAPI document. */
export const featureModules: readonly FeatureModule[] = [tenantsModule, authModule, tagsModule];
