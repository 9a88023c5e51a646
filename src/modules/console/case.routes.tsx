import type { FastifyReply, FastifyRequest } from "fastify";
import type { VNode } from "preact";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { AppError, badRequest } from "../../platform/errors.js";
import { DECISION_VALUES, type DecisionValue } from "../case-model/index.js";
import {
  addComment,
  assignCases,
  closeCase,
  getCase,
  overrideDecision,
  requireWork,
} from "../cases/index.js";
import {
  answerRequest,
  cancelRequest,
  mintUploadSlot,
  openDocument,
  RaiseBody,
  raiseRequest,
  remindRequest,
  rfiAudit,
} from "../rfi/index.js";
import { applyTag, removeTag } from "../tags/index.js";
import { workerOf } from "./all-cases.routes.js";
import { actorNames, caseScreen } from "./case.service.js";
import { pageOf, problemOf, seeOther, sendPage, sessionOf } from "./console.plugin.js";
import { formOf } from "./form.js";
import { checkAgainst } from "./validate.js";
import { CASE_NOTICES, CasePageView } from "./views/case.js";
import type { FormProblem } from "./views/layout.js";

type CaseParams = { Params: { caseId: string } };
type RfiParams = { Params: { caseId: string; rfiId: string } };

const read = { console: { permission: "cases:read" as const } };
const review = { console: { permission: "cases:review" as const } };

/** The browser's datetime-local value, read as UTC, as the RFC 3339 the service takes. */
function deadline(value: string): string | undefined {
  if (!value) return undefined;
  if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d)?$/.test(value))
    throw badRequest("the deadline is not a date and time", [
      { path: "expiresAt", message: "is not a date and time" },
    ]);
  return `${value.length === 16 ? `${value}:00` : value}Z`;
}

/** What a case page says above its panels. */
export interface CasePageOptions {
  notice?: string;
  /** A refused form: its problems beside its fields (status 400 unless said). */
  problem?: FormProblem;
  status?: number;
  /** What an action gave (a provider's answer), above the panels. */
  result?: VNode;
}

/** Sends the case page of the signed-in user's tenant (404 for another tenant's case). */
export async function sendCasePage(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  caseId: string,
  options: CasePageOptions = {},
): Promise<FastifyReply> {
  const { notice, problem, result } = options;
  const page = { ...pageOf(request, reply), path: `/console/cases/${caseId}`, problem };
  const screen = await caseScreen(ctx, sessionOf(request).tenantId, caseId, page);
  const view = <CasePageView page={page} screen={screen} notice={notice} result={result} />;
  return sendPage(reply, view, options.status ?? (problem ? 400 : 200));
}

/** The case page, its actions (each a form post), its documents and its upload slots. */
export function caseRoutes(scope: App, ctx: AppContext): void {
  const casePage = (
    request: FastifyRequest,
    reply: FastifyReply,
    caseId: string,
    notice?: string,
    problem?: FormProblem,
    status?: number,
  ) => sendCasePage(ctx, request, reply, caseId, { notice, problem, status });

  /** The notice a form post led to: the case page's own, or a feature's. */
  const notices = new Map(
    [CASE_NOTICES, ...ctx.console.sections.map((s) => s.caseNotices ?? {})].flatMap((n) => Object.entries(n)),
  );
  const noticeOf = (done: string | undefined) => (done ? notices.get(done) : undefined);

  scope.get<CaseParams & { Querystring: { done?: string } }>(
    "/cases/:caseId",
    { config: read },
    async (request, reply) => casePage(request, reply, request.params.caseId, noticeOf(request.query.done)),
  );

  scope.get<{ Params: { caseId: string; uploadId: string } }>(
    "/cases/:caseId/documents/:uploadId",
    { config: read },
    async (request, reply) => {
      const { caseId, uploadId } = request.params;
      await getCase(ctx, sessionOf(request).tenantId, caseId);
      const doc = await openDocument(ctx, caseId, uploadId);
      // The service never inspects the bytes: the type is the declared one, never sniffed, and
      // the document runs in a sandbox with nothing allowed, framed only by the console itself.
      return reply
        .type(doc.contentType)
        .header("content-length", doc.sizeBytes)
        .header("content-disposition", "inline")
        .header("x-content-type-options", "nosniff")
        .header("content-security-policy", "sandbox; default-src 'none'; frame-ancestors 'self'")
        .header("x-frame-options", "SAMEORIGIN")
        .header("cache-control", "private, no-store")
        .send(doc.stream);
    },
  );

  const done = (caseId: string, what: keyof typeof CASE_NOTICES, anchor: string) =>
    `/console/cases/${caseId}?done=${what}#${anchor}`;

  /**
   * A form post at `/cases/:caseId<path>` on one of the tenant's cases (404 for another tenant's):
   * `act`, then back to the case page at `anchor`, with the notice `what`.
   */
  const caseAction = <P extends CaseParams["Params"]>(
    path: string,
    what: keyof typeof CASE_NOTICES,
    anchor: string,
    act: (session: ReturnType<typeof sessionOf>, params: P) => Promise<unknown>,
  ) =>
    scope.post(`/cases/:caseId${path}`, { config: review }, async (request, reply) => {
      const session = sessionOf(request);
      const params = request.params as P;
      await getCase(ctx, session.tenantId, params.caseId);
      await act(session, params);
      return seeOther(reply, done(params.caseId, what, anchor));
    });

  scope.post<CaseParams>("/cases/:caseId/decision", { config: review }, async (request, reply) => {
    const session = sessionOf(request);
    const { caseId } = request.params;
    const form = formOf(request);
    const value = form.text("value");
    const reason = form.text("reason");
    const problems = [
      ...((DECISION_VALUES as readonly string[]).includes(value)
        ? []
        : [{ path: "value", message: "Choose the new decision." }]),
      ...(reason.length === 0 || reason.length > 2000
        ? [{ path: "reason", message: "A reason of 1 to 2000 characters is required." }]
        : []),
    ];
    if (problems.length > 0) {
      const problem = problemOf(badRequest("the override is not complete", problems), "decision", {
        value,
        reason,
      });
      return casePage(request, reply, caseId, undefined, problem);
    }
    await getCase(ctx, session.tenantId, caseId);
    await requireWork(ctx, workerOf(session), caseId);
    const basedOn = /^\d{1,6}$/.test(form.text("basedOn")) ? Number(form.text("basedOn")) : undefined;
    try {
      await overrideDecision(
        ctx,
        caseId,
        { value: value as DecisionValue, actor: session.userId, reason, basedOn },
        session.actor,
      );
    } catch (error) {
      if (!(error instanceof AppError) || error.status !== 409 || basedOn === undefined) throw error;
      // Someone decided first: the page shows their decision, and this one is not recorded.
      const [now, names] = await Promise.all([
        getCase(ctx, session.tenantId, caseId),
        actorNames(ctx, session.tenantId),
      ]);
      const latest = (now.result as { decision: { value: string; actor: string } | null }).decision;
      const message = latest
        ? `${names.get(latest.actor) ?? latest.actor} decided first: the decision is now ${latest.value.replaceAll("_", " ")}. Your override was not recorded; read the case again and decide.`
        : error.message;
      const problem = { form: "decision", message, fields: {}, values: { value, reason } };
      return casePage(request, reply, caseId, undefined, problem, 409);
    }
    return seeOther(reply, done(caseId, "decision", "decision"));
  });

  caseAction("/close", "closed", "review", async (session, { caseId }) => {
    await requireWork(ctx, workerOf(session), caseId);
    await closeCase(ctx, caseId, { actor: session.userId }, session.actor);
  });

  scope.post<CaseParams>("/cases/:caseId/assign", { config: review }, async (request, reply) => {
    const session = sessionOf(request);
    const { caseId } = request.params;
    const assignee = formOf(request).text("assignee");
    await getCase(ctx, session.tenantId, caseId);
    await assignCases(ctx, workerOf(session), [caseId], assignee || null);
    return seeOther(reply, done(caseId, "assigned", "owner"));
  });

  scope.post<CaseParams>("/cases/:caseId/comments", { config: review }, async (request, reply) => {
    const session = sessionOf(request);
    const { caseId } = request.params;
    const body = formOf(request).text("body");
    await getCase(ctx, session.tenantId, caseId);
    try {
      await addComment(ctx, workerOf(session), caseId, body);
    } catch (error) {
      return casePage(request, reply, caseId, undefined, problemOf(error, "comment", { body }));
    }
    return seeOther(reply, done(caseId, "commented", "comments"));
  });

  scope.post<CaseParams>("/cases/:caseId/tags", { config: review }, async (request, reply) => {
    const session = sessionOf(request);
    const { caseId } = request.params;
    const tag = formOf(request).text("tag");
    await applyTag(ctx, session.tenantId, { kind: "analyst", userId: session.userId }, caseId, tag);
    return seeOther(reply, done(caseId, "tagged", "tags"));
  });

  scope.post<CaseParams>("/cases/:caseId/tags/remove", { config: review }, async (request, reply) => {
    const session = sessionOf(request);
    const { caseId } = request.params;
    const tag = formOf(request).text("tag");
    await removeTag(ctx, session.tenantId, caseId, tag, { kind: "analyst", userId: session.userId });
    return seeOther(reply, done(caseId, "untagged", "tags"));
  });

  scope.post<CaseParams>("/cases/:caseId/rfi", { config: review }, async (request, reply) => {
    const session = sessionOf(request);
    const { caseId } = request.params;
    const form = formOf(request);
    const cc = form
      .text("cc")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
    const analyst = { kind: "analyst" as const, userId: session.userId };
    try {
      const expiresAt = deadline(form.text("expiresAt"));
      const input = checkAgainst(
        RaiseBody,
        {
          to: form.text("to"),
          ...(cc.length > 0 ? { cc } : {}),
          subject: form.text("subject"),
          body: form.text("body"),
          ...(expiresAt ? { expiresAt } : {}),
        },
        "request",
      );
      await raiseRequest(ctx, session.tenantId, analyst, caseId, input);
    } catch (error) {
      const values = Object.fromEntries(
        ["to", "cc", "subject", "body", "expiresAt"].map((f) => [f, form.text(f)]),
      );
      const problem = problemOf(error, "rfi", values, (path) =>
        path.replace(/^request\./, "").replace(/[.[].*$/, ""),
      );
      return casePage(request, reply, caseId, undefined, problem);
    }
    return seeOther(reply, done(caseId, "raised", "rfi"));
  });

  caseAction<RfiParams["Params"]>("/rfi/:rfiId/remind", "reminded", "rfi", (session, { caseId, rfiId }) =>
    remindRequest(ctx, caseId, rfiId, rfiAudit.remind(session, rfiId)),
  );

  caseAction<RfiParams["Params"]>("/rfi/:rfiId/cancel", "cancelled", "rfi", (session, { caseId, rfiId }) =>
    cancelRequest(ctx, caseId, rfiId, session.userId, rfiAudit.cancel(session, rfiId)),
  );

  scope.post<RfiParams>("/cases/:caseId/rfi/:rfiId/answer", { config: review }, async (request, reply) => {
    const session = sessionOf(request);
    const { caseId, rfiId } = request.params;
    const form = formOf(request);
    const keys = form.list("fieldKey");
    const values = form.list("fieldValue");
    const fields = keys
      .map((key, i) => ({ key: key.trim(), value: (values[i] ?? "").trim() }))
      .filter((f) => f.key !== "" || f.value !== "");
    const documents = form.list("uploadId").map((uploadId) => ({ uploadId }));
    if (fields.length === 0 && documents.length === 0)
      throw badRequest("an answer needs a field or a document");
    await answerRequest(
      ctx,
      session.tenantId,
      caseId,
      rfiId,
      { kind: "analyst", userId: session.userId },
      { fields, documents },
      rfiAudit.answer(session, rfiId),
    );
    return seeOther(reply, done(caseId, "answered", "rfi"));
  });

  scope.post<RfiParams>(
    "/cases/:caseId/rfi/:rfiId/uploads",
    { config: { console: { permission: "cases:review", json: true } } },
    async (request, reply) => {
      const session = sessionOf(request);
      const { caseId, rfiId } = request.params;
      if (request.headers["content-type"]?.startsWith("application/json") !== true) {
        throw new AppError("unsupported_media_type", "send the file's facts as JSON");
      }
      const slot = await mintUploadSlot(ctx, session.tenantId, caseId, rfiId, request.body);
      return reply.status(201).send(slot);
    },
  );
}
