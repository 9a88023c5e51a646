import type { FastifyReply, FastifyRequest } from "fastify";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { AppError, badRequest } from "../../platform/errors.js";
import {
  assignCases,
  closeCase,
  getCase,
  removeCaseFilter,
  saveCaseFilter,
  type Worker,
} from "../cases/index.js";
import { applyTag } from "../tags/index.js";
import { type ConsoleSession, can } from "../users/index.js";
import { type AllCasesQuery, allCases } from "./all-cases.service.js";
import { pageOf, problemOf, seeOther, sendPage, sessionOf } from "./console.plugin.js";
import { formOf } from "./form.js";
import { ALL_CASES_NOTICES, AllCasesView } from "./views/all-cases.js";
import type { FormProblem } from "./views/layout.js";

const read = { console: { permission: "cases:read" as const } };
const review = { console: { permission: "cases:review" as const } };

type ViewQuery = AllCasesQuery & { done?: string };

/** Who acts, as the cases module's work on cases needs it. */
export function workerOf(session: ConsoleSession): Worker {
  return {
    tenantId: session.tenantId,
    actor: session.actor,
    userId: session.userId,
    admin: session.role === "admin",
  };
}

/** A console path of the view (the bulk form's way back), never another site. */
function backTo(value: string): string {
  return /^\/console\/(cases|mine)(\?[^\\]*)?$/.test(value) && !value.includes("//")
    ? value
    : "/console/cases";
}

/** The "All cases" and "Mine" views, saved filters, and the bulk actions on chosen cases. */
export function allCasesRoutes(scope: App, ctx: AppContext): void {
  const view = async (
    request: FastifyRequest,
    reply: FastifyReply,
    query: ViewQuery,
    mine: boolean,
    problem?: FormProblem,
    status = problem ? 400 : 200,
  ) => {
    const session = sessionOf(request);
    const page = { ...pageOf(request, reply), problem };
    const data = await allCases(
      ctx,
      session.tenantId,
      session.userId,
      mine ? { ...query, assignee: "me" } : query,
    );
    return sendPage(
      reply,
      <AllCasesView
        page={page}
        view={data}
        mine={mine}
        notice={query.done ? ALL_CASES_NOTICES[query.done] : undefined}
        canAct={can(session.role, "cases:review")}
        isAdmin={session.role === "admin"}
      />,
      status,
    );
  };

  scope.get<{ Querystring: ViewQuery }>("/cases", { config: read }, (request, reply) =>
    view(request, reply, request.query, false),
  );
  scope.get<{ Querystring: ViewQuery }>("/mine", { config: read }, (request, reply) =>
    view(request, reply, request.query, true),
  );

  scope.post("/cases/filters", { config: review }, async (request, reply) => {
    const session = sessionOf(request);
    const form = formOf(request);
    const query = form.text("query");
    const current = Object.fromEntries(new URLSearchParams(query)) as ViewQuery;
    try {
      // Only a query the view itself understands is saved.
      await allCases(ctx, session.tenantId, session.userId, current);
      await saveCaseFilter(ctx, workerOf(session), form.text("name"), query);
    } catch (error) {
      return view(request, reply, current, false, problemOf(error, "filter", { name: form.text("name") }));
    }
    return seeOther(reply, `/console/cases?${query}${query ? "&" : ""}done=filter-saved`);
  });

  scope.post<{ Params: { filterId: string } }>(
    "/cases/filters/:filterId/delete",
    { config: review },
    async (request, reply) => {
      await removeCaseFilter(ctx, workerOf(sessionOf(request)), request.params.filterId);
      return seeOther(reply, "/console/cases?done=filter-deleted");
    },
  );

  /** A bulk action on the chosen cases; `progress.done` counts the cases done one by one. */
  const bulkAction = async (
    request: FastifyRequest,
    reply: FastifyReply,
    form: ReturnType<typeof formOf>,
    back: string,
    progress: { done: number },
  ) => {
    const session = sessionOf(request);
    const caseIds = [...new Set(form.list("caseId"))];
    const action = form.text("action");
    const withDone = (done: string) => `${back}${back.includes("?") ? "&" : "?"}done=${done}`;
    if (caseIds.length === 0) throw badRequest("Choose at least one case.");
    if (caseIds.length > 200) throw badRequest("Choose at most 200 cases at once.");
    const who = workerOf(session);
    switch (action) {
      case "take":
        await assignCases(ctx, who, caseIds, session.userId);
        return seeOther(reply, withDone("assigned"));
      case "assign": {
        const assignee = form.text("assignee");
        if (!assignee) throw badRequest("Choose whom to assign the cases to.");
        await assignCases(ctx, who, caseIds, assignee);
        return seeOther(reply, withDone("assigned"));
      }
      case "release":
        await assignCases(ctx, who, caseIds, null);
        return seeOther(reply, withDone("released"));
      case "tag": {
        const tag = form.text("tag");
        if (!tag) throw badRequest("Choose the tag to add.");
        // Each case's tag and its audit row commit together (tags writes both).
        for (const caseId of caseIds) {
          await applyTag(ctx, session.tenantId, { kind: "analyst", userId: session.userId }, caseId, tag);
          progress.done += 1;
        }
        return seeOther(reply, withDone("tagged"));
      }
      case "close":
        for (const caseId of caseIds) {
          const before = await getCase(ctx, session.tenantId, caseId);
          if (before.status !== "closed")
            await closeCase(ctx, caseId, { actor: session.userId }, session.actor);
          progress.done += 1;
        }
        return seeOther(reply, withDone("closed"));
      default:
        throw badRequest("Choose what to do with the chosen cases.");
    }
  };

  scope.post("/cases/bulk", { config: review }, async (request, reply) => {
    const form = formOf(request);
    const back = backTo(form.text("back"));
    const progress = { done: 0 };
    try {
      return await bulkAction(request, reply, form, back, progress);
    } catch (error) {
      // A refusal is shown above the bulk form on the view it came from, like any refused form.
      if (!(error instanceof AppError) || ![400, 409, 422].includes(error.status)) throw error;
      const url = new URL(back, "http://console.invalid");
      const chosen = [...new Set(form.list("caseId"))].length;
      const message =
        progress.done > 0
          ? `${error.message} (${progress.done} of the ${chosen} chosen cases were done before this.)`
          : error.message;
      const problem = { form: "bulk", message, fields: {}, values: {} };
      const query = Object.fromEntries(url.searchParams) as ViewQuery;
      return view(request, reply, query, url.pathname === "/console/mine", problem, error.status);
    }
  });
}
