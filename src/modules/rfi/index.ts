import type { FeatureModule } from "../../platform/app-types.js";
import { informationRequestNode } from "./information-request.node.js";
import { rfiAdminRoutes } from "./rfi.admin.routes.js";
import { rfiCli } from "./rfi.cli.js";
import { rfiJobs } from "./rfi.jobs.js";
import { rfiRoutes } from "./rfi.routes.js";
import { uploadRoutes } from "./uploads.routes.js";

export const rfiModule: FeatureModule = {
  name: "rfi",
  nodeTypes: [informationRequestNode],
  async routes(app, ctx) {
    rfiRoutes(app, ctx);
    rfiAdminRoutes(app, ctx);
    if (ctx.blobs.receiver) await uploadRoutes(app, ctx, ctx.blobs.receiver);
  },
  jobs: rfiJobs,
  cli: rfiCli,
};
