import type { InSameTransaction } from "../../platform/db/index.js";
import { type AuditBy, audited } from "../users/index.js";
import type { InformationRequestView } from "./rfi.service.js";

/**
 * The audit rows of a change to an information request, whatever its door (console, operator
 * API and CLI, partner API): written in the change's transaction by the service's `also`.
 */
export const rfiAudit = {
  remind: (by: AuditBy, rfiId: string): InSameTransaction<InformationRequestView> =>
    audited(by, "rfi.remind", `rfi:${rfiId}`, (after) => ({
      after: { reminderCount: after.reminderCount },
    })),
  cancel: (by: AuditBy, rfiId: string): InSameTransaction<InformationRequestView> =>
    audited(by, "rfi.cancel", `rfi:${rfiId}`, (after) => ({
      before: { status: "pending" },
      after: { status: after.status },
    })),
  /** The answer's counts, never its values (a partner's answer may hold personal data in bulk). */
  answer: (
    by: AuditBy,
    rfiId: string,
  ): InSameTransaction<{ status: string; fieldCount: number; documentCount: number }> =>
    audited(by, "rfi.answer", `rfi:${rfiId}`, (result) => ({
      before: { status: "pending" },
      after: { status: result.status, fieldCount: result.fieldCount, documentCount: result.documentCount },
    })),
};
