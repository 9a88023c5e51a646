import type { FeatureModule } from "../../platform/app-types.js";

export const casesModule: FeatureModule = { name: "cases" };
