import type { InSameTransaction } from "../../platform/db/index.js";
import { type ConsoleSession, insertAudit } from "../users/index.js";

/**
 * The audit row of a console change made through another feature's service, written in that
 * service's transaction (`also`), after the change and from its result: the change and its row
 * commit together or not at all (decision 0015).
 */
export function audited<R>(
  session: ConsoleSession,
  action: string,
  target: string | ((result: R) => string),
  change: (result: R) => { before?: unknown; after?: unknown } = () => ({}),
): InSameTransaction<R> {
  return (tx, result) =>
    insertAudit(tx, session, action, typeof target === "string" ? target : target(result), change(result));
}
