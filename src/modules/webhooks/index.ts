import type { FeatureModule } from "../../platform/app-types.js";

export const webhooksModule: FeatureModule = { name: "webhooks" };
