import type { AppContext } from "../../platform/context.js";
import { type ConsoleSession, insertAudit } from "../users/index.js";

/**
 * Records a console change made through another feature's service. That service commits in a
 * transaction of its own, so the entry is written right after it (see the decision record).
 */
export async function audit(
  ctx: AppContext,
  session: ConsoleSession,
  action: string,
  target: string,
  change: { before?: unknown; after?: unknown } = {},
): Promise<void> {
  await insertAudit(ctx.db.root, session, action, target, change);
}
