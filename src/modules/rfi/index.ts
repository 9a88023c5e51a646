import type { FeatureModule } from "../../platform/app-types.js";

export const rfiModule: FeatureModule = { name: "rfi" };
