import type { FeatureModule } from "../../platform/app-types.js";

export const workflowsModule: FeatureModule = { name: "workflows" };
