import type { FastifyReply, FastifyRequest } from "fastify";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { badRequest } from "../../platform/errors.js";
import { CASE_TYPES } from "../case-model/index.js";
import { getReviewSlas, setReviewSlas } from "../cases/index.js";
import { workerOf } from "./all-cases.routes.js";
import { pageOf, problemOf, seeOther, sendPage, sessionOf } from "./console.plugin.js";
import { formOf } from "./form.js";
import type { FormProblem } from "./views/layout.js";
import { ReviewSettingsView } from "./views/settings/review.js";

const admins = { console: { permission: "users:manage" as const } };

/** Settings › Review deadlines: the tenant's review SLA, in hours by case type. */
export function reviewSettingsRoutes(scope: App, ctx: AppContext): void {
  const show = async (
    request: FastifyRequest,
    reply: FastifyReply,
    notice?: string,
    problem?: FormProblem,
  ) => {
    const slas = await getReviewSlas(ctx, sessionOf(request).tenantId);
    const page = { ...pageOf(request, reply), path: "/console/settings/review", problem };
    return sendPage(
      reply,
      <ReviewSettingsView page={page} slas={slas} notice={notice} />,
      problem ? 400 : 200,
    );
  };

  scope.get<{ Querystring: { done?: string } }>("/settings/review", { config: admins }, (request, reply) =>
    show(request, reply, request.query.done === "saved" ? "The review deadlines were saved." : undefined),
  );

  scope.post("/settings/review", { config: admins }, async (request, reply) => {
    const form = formOf(request);
    const values = Object.fromEntries(CASE_TYPES.map((t) => [t, form.text(t)]));
    try {
      const hours: Record<string, number | null> = {};
      for (const [type, value] of Object.entries(values)) {
        if (value !== "" && !/^\d{1,4}$/.test(value))
          throw badRequest("a deadline is a whole number of hours", [
            { path: type, message: "Give whole hours." },
          ]);
        hours[type] = value === "" ? null : Number(value);
      }
      await setReviewSlas(ctx, workerOf(sessionOf(request)), hours);
    } catch (error) {
      return show(request, reply, undefined, problemOf(error, "review", values));
    }
    return seeOther(reply, "/console/settings/review?done=saved");
  });
}
