import type { FeatureModule } from "../../platform/app-types.js";
import { attributesRoutes } from "./attributes.routes.js";

export const attributesModule: FeatureModule = { name: "attributes", routes: attributesRoutes };
