import type { FeatureModule } from "../platform/app-types.js";
import { attributesModule } from "./attributes/index.js";
import { authModule } from "./auth/index.js";
import { backtestsModule } from "./backtests/index.js";
import { casesModule } from "./cases/index.js";
import { consoleModule } from "./console/index.js";
import { engineModule } from "./engine/index.js";
import { entitiesModule } from "./entities/index.js";
import { listsModule } from "./lists/index.js";
import { providersModule } from "./providers/index.js";
import { rfiModule } from "./rfi/index.js";
import { tagsModule } from "./tags/index.js";
import { tenantsModule } from "./tenants/index.js";
import { usersModule } from "./users/index.js";
import { webhooksModule } from "./webhooks/index.js";
import { workflowsModule } from "./workflows/index.js";

/** Every feature of the service, in the order their routes appear in the OpenAPI document. */
export const featureModules: readonly FeatureModule[] = [
  casesModule,
  engineModule,
  tagsModule,
  rfiModule,
  attributesModule,
  tenantsModule,
  authModule,
  workflowsModule,
  webhooksModule,
  providersModule,
  entitiesModule,
  listsModule,
  backtestsModule,
  usersModule,
  consoleModule,
];
