import type { FeatureModule } from "../../platform/app-types.js";

export const engineModule: FeatureModule = { name: "engine" };
