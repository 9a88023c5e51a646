import type { traceCall } from "./providers.service.js";

/** Resolutions the providers module reports to `resumeWait`. */
export const VENDOR_RESULT = "vendor_result";
export const RETRY_REQUESTED = "retry_requested";

/** A vendor asked the applicant to try again: the node stays paused and says so. */
export interface RetryRequest {
  tenantId: string;
  caseId: string;
  payloadType: string;
  output: Record<string, unknown>;
}

export interface VendorResultOutput {
  output: Record<string, unknown>;
  calls: ReturnType<typeof traceCall>[];
}
