import { stringify } from "csv-stringify/sync";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { isUuid } from "../../platform/crypto.js";
import { badRequest } from "../../platform/errors.js";
import { type AuditFilters, searchAudit } from "../users/index.js";
import { actorNames } from "./case.service.js";
import { pageOf, sendPage, sessionOf } from "./console.plugin.js";
import { utcDay as day } from "./form.js";
import { AUDIT_ACTIONS, AuditPageView } from "./views/audit.js";
import { actorName } from "./views/components.js";

export const AUDIT_PAGE_SIZE = 50;
/** The most rows one CSV export holds (narrow the filters for more). */
export const AUDIT_EXPORT_ROWS = 10_000;

/** The audit log's query string, as the filter form sends it. */
export interface AuditQuery {
  actor?: string;
  action?: string;
  caseId?: string;
  from?: string;
  to?: string;
  before?: string;
}

/** The filters of a query; 400 for one the form could not have sent. */
function filtersOf(q: AuditQuery): AuditFilters {
  const action = q.action || undefined;
  if (action && !(action in AUDIT_ACTIONS) && !/^[a-z_]{1,32}\.$/.test(action))
    throw badRequest(`unknown action "${action.slice(0, 64)}"`);
  const caseId = q.caseId?.trim() || undefined;
  if (caseId && !isUuid(caseId)) throw badRequest("a case id is a UUID");
  return {
    actor: q.actor?.slice(0, 200) || undefined,
    action,
    target: caseId ? `case:${caseId.toLowerCase()}` : undefined,
    from: day(q.from, "the first day"),
    to: day(q.to, "the last day", true),
  };
}

/** The audit log: filtered by who, what, which case and when; newest first; exported as CSV. */
export function auditRoutes(scope: App, ctx: AppContext): void {
  scope.get<{ Querystring: AuditQuery }>(
    "/audit",
    { config: { console: { permission: "cases:read" } } },
    async (request, reply) => {
      const { tenantId } = sessionOf(request);
      const filters = filtersOf(request.query);
      const before = /^\d{1,15}$/.test(request.query.before ?? "") ? Number(request.query.before) : undefined;
      const [rows, names] = await Promise.all([
        searchAudit(ctx.db.root, tenantId, filters, AUDIT_PAGE_SIZE + 1, before),
        actorNames(ctx, tenantId),
      ]);
      const page = rows.slice(0, AUDIT_PAGE_SIZE);
      const next = rows.length > AUDIT_PAGE_SIZE ? page.at(-1)?.id : undefined;
      const { before: _position, ...query } = request.query;
      return sendPage(
        reply,
        <AuditPageView
          page={pageOf(request, reply)}
          rows={page}
          names={names}
          next={next}
          paged={before !== undefined}
          query={Object.fromEntries(
            Object.entries(query).filter(([, v]) => typeof v === "string" && v !== ""),
          )}
        />,
      );
    },
  );

  scope.get<{ Querystring: AuditQuery }>(
    "/audit.csv",
    { config: { console: { permission: "cases:read" } } },
    async (request, reply) => {
      const { tenantId } = sessionOf(request);
      const [rows, names] = await Promise.all([
        searchAudit(ctx.db.root, tenantId, filtersOf(request.query), AUDIT_EXPORT_ROWS),
        actorNames(ctx, tenantId),
      ]);
      const csv = stringify(
        rows.map((r) => [
          r.at.toISOString(),
          r.actor,
          actorName(r.actor, names) ?? "",
          r.action,
          AUDIT_ACTIONS[r.action] ?? "",
          r.target,
          r.before === null ? "" : JSON.stringify(r.before),
          r.after === null ? "" : JSON.stringify(r.after),
        ]),
        {
          header: true,
          columns: ["at", "actor", "actor_name", "action", "action_name", "target", "before", "after"],
          // A cell a spreadsheet would run as a formula (=, +, -, @) is written as text.
          escape_formulas: true,
        },
      );
      return reply
        .type("text/csv; charset=utf-8")
        .header("content-disposition", 'attachment; filename="audit-log.csv"')
        .send(csv);
    },
  );
}
