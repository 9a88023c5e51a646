import type { FeatureModule } from "../../platform/app-types.js";

export const attributesModule: FeatureModule = { name: "attributes" };
