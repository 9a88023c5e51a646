import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { listAudit } from "../users/index.js";
import { actorNames } from "./case.service.js";
import { pageOf, sendPage, sessionOf } from "./console.plugin.js";
import { AuditPageView } from "./views/audit.js";

export const AUDIT_PAGE_SIZE = 50;

export function auditRoutes(scope: App, ctx: AppContext): void {
  scope.get<{ Querystring: { before?: string } }>(
    "/audit",
    { config: { console: { permission: "cases:read" } } },
    async (request, reply) => {
      const { tenantId } = sessionOf(request);
      const before = /^\d{1,15}$/.test(request.query.before ?? "") ? Number(request.query.before) : undefined;
      const [rows, names] = await Promise.all([
        listAudit(ctx.db.root, tenantId, AUDIT_PAGE_SIZE + 1, before),
        actorNames(ctx, tenantId),
      ]);
      const page = rows.slice(0, AUDIT_PAGE_SIZE);
      const next = rows.length > AUDIT_PAGE_SIZE ? page.at(-1)?.id : undefined;
      return sendPage(
        reply,
        <AuditPageView
          page={pageOf(request, reply)}
          rows={page}
          names={names}
          next={next}
          paged={before !== undefined}
        />,
      );
    },
  );
}
