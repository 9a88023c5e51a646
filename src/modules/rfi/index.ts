import { feature } from "../../platform/app-types.js";
import { informationRequestNode } from "./information-request.node.js";
import { rfiAdminRoutes } from "./rfi.admin.routes.js";
import { rfiCli } from "./rfi.cli.js";
import { rfiJobs } from "./rfi.jobs.js";
import { rfiRoutes } from "./rfi.routes.js";
import { listCaseInformationRequests } from "./rfi.service.js";
import { uploadRoutes } from "./uploads.routes.js";

export const rfiModule = feature("rfi", {
  tables: ["information_requests", "rfi_upload_slots", "rfi_case_upload_budgets"],
  nodeTypes: [informationRequestNode],
  caseRecord: { informationRequests: listCaseInformationRequests },
  async routes(app, ctx) {
    rfiRoutes(app, ctx);
    rfiAdminRoutes(app, ctx);
    if (ctx.blobs.receiver) await uploadRoutes(app, ctx, ctx.blobs.receiver);
  },
  jobs: rfiJobs,
  cli: rfiCli,
});

export {
  /** The audit rows of reminders, cancels and answers, for a service's `also`. */
  rfiAudit,
} from "./rfi.audit.js";
export {
  /** The limits of information requests (a case record shows the `shownPerCase` most recent). */
  RFI_LIMITS,
} from "./rfi.limits.js";
export {
  /** The body of a request to raise an information request, as a schema. */
  RaiseBody,
} from "./rfi.schemas.js";
export {
  /** Cancels a pending request */
  cancelRequest,
  /** An information request as the partner API shows it. */
  type InformationRequestView,
  /** Raises a request through the API (`source` api) or by an analyst (`source` analyst). */
  raiseRequest,
  /** Raises the pending request's `case.rfi_requested` again */
  remindRequest,
} from "./rfi.service.js";
export {
  /** Answers a request, all or nothing, in one transaction */
  answerRequest,
} from "./rfi-answer.service.js";
export {
  /** Mints an upload slot (endpoint 12). */
  mintUploadSlot,
  /** An uploaded document of the case, for an analyst (operator API). */
  openDocument,
} from "./uploads.service.js";
