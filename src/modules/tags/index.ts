import type { FeatureModule } from "../../platform/app-types.js";
import { tagsCli } from "./tags.cli.js";
import { tagsRoutes } from "./tags.routes.js";

export const tagsModule: FeatureModule = { name: "tags", routes: tagsRoutes, cli: tagsCli };
