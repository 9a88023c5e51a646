import { Type } from "typebox";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { AppError } from "../../platform/errors.js";
import { errorResponse } from "../../platform/openapi.js";
import { routeGroup } from "../../platform/route-group.js";
import { operatorActor, operatorBy } from "../users/index.js";
import { rfiAudit } from "./rfi.audit.js";
import { RFI_LIMITS } from "./rfi.limits.js";
import { AdminAnswerBody, AdminRaiseBody } from "./rfi.schemas.js";
import {
  cancelRequest,
  listRequestsOfCase,
  raiseRequest,
  remindRequest,
  tenantOfCase,
} from "./rfi.service.js";
import { ANSWER_RESPONSES, InformationRequestSchema } from "./rfi.views.js";
import { answerAsAnalyst } from "./rfi-answer.service.js";
import { ANSWER_VALUES } from "./rfi-answer.validation.js";
import { openDocument } from "./uploads.service.js";

const CaseParams = Type.Object({ caseId: Type.String() });
const RfiParams = Type.Object({ caseId: Type.String(), rfiId: Type.String() });
const TAGS = ["operator: information requests"];

/** `filename` for Content-Disposition: an ASCII fallback plus the exact name (RFC 6266 / 5987). */
function contentDisposition(filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\]/g, "_");
  const encoded = encodeURIComponent(filename).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}

function optionalActor(body: unknown): string | undefined {
  if (body === undefined || body === null) return undefined;
  const actor = (body as { actor?: unknown }).actor;
  if (actor === undefined) return undefined;
  if (typeof actor !== "string" || actor.trim() === "" || actor.length > RFI_LIMITS.actorLength) {
    throw new AppError("invalid_request", `actor must be 1 to ${RFI_LIMITS.actorLength} characters`);
  }
  return actor;
}

/** The operator API of information requests (analysts act through it). */
export function rfiAdminRoutes(app: App, ctx: AppContext): void {
  const operator = routeGroup(app, TAGS, { admin: true, errorStyle: "rfi" });
  /** The operator acting on a case's request, in the case's tenant's audit log. */
  const operatorOf = async (caseId: string, actor?: string) =>
    operatorBy(await tenantOfCase(ctx, caseId), actor);

  operator.post(
    "/admin/cases/:caseId/rfi",
    {
      operationId: "raiseInformationRequestAsAnalyst",
      summary: "Raise an information request as an analyst",
      description: "`requested_by` is `analyst:<actor>`, `source` `analyst`; emits `case.rfi_requested`.",
      params: CaseParams,
      body: AdminRaiseBody,
      response: {
        201: InformationRequestSchema,
        409: errorResponse("`case_terminal` (closed or failed case) or `dry_run`", "rfi"),
      },
    },
    async (request, reply) => {
      const { actor, ...input } = request.body;
      const tenantId = await tenantOfCase(ctx, request.params.caseId);
      const view = await raiseRequest(
        ctx,
        tenantId,
        { kind: "analyst", userId: actor },
        request.params.caseId,
        input,
        operatorActor(actor),
      );
      return reply.status(201).send(view);
    },
  );

  operator.get(
    "/admin/cases/:caseId/rfi",
    {
      operationId: "listInformationRequestsAsOperator",
      summary: "List a case's information requests with answers and documents",
      description: "Oldest first, each with its answer and documents.",
      params: CaseParams,
      response: { 200: Type.Object({ informationRequests: Type.Array(InformationRequestSchema) }) },
    },
    async (request) => {
      const tenantId = await tenantOfCase(ctx, request.params.caseId);
      return { informationRequests: await listRequestsOfCase(ctx, tenantId, request.params.caseId) };
    },
  );

  operator.post(
    "/admin/cases/:caseId/rfi/:rfiId/remind",
    {
      operationId: "remindInformationRequest",
      summary: "Send a pending request's case.rfi_requested again (a reminder)",
      description: "Same `rfi_id`, a fresh `webhookId`. 409 `not_pending` unless the request is pending.",
      params: RfiParams,
      response: {
        200: InformationRequestSchema,
        409: errorResponse("`not_pending`: the request is not pending", "rfi"),
      },
    },
    async ({ params: { caseId, rfiId } }) =>
      remindRequest(ctx, caseId, rfiId, rfiAudit.remind(await operatorOf(caseId), rfiId)),
  );

  operator.post(
    "/admin/cases/:caseId/rfi/:rfiId/cancel",
    {
      operationId: "cancelInformationRequest",
      summary: "Cancel a pending request",
      description:
        "Optional body `{actor}` records who cancelled. A workflow node waiting on the request continues " +
        "(`onCancelled`). Cancelling again answers 200 unchanged; an answered or expired request is 409 `not_pending`.",
      params: RfiParams,
      response: {
        200: InformationRequestSchema,
        409: errorResponse("`not_pending`: the request is not pending", "rfi"),
      },
    },
    async ({ params: { caseId, rfiId }, body }) => {
      const actor = optionalActor(body);
      return cancelRequest(
        ctx,
        caseId,
        rfiId,
        actor,
        rfiAudit.cancel(await operatorOf(caseId, actor), rfiId),
      );
    },
  );

  app.post(
    "/admin/cases/:caseId/rfi/:rfiId/answer",
    {
      config: { admin: true, errorStyle: "rfi", guardDefers: ANSWER_VALUES },
      attachValidation: true,
      schema: {
        tags: TAGS,
        operationId: "answerInformationRequestAsAnalyst",
        summary: "Record an analyst's answer",
        description:
          "As endpoint 13, with `actor`: `answered_by` is `analyst:<actor>`, `source` `analyst`. A later " +
          'partner answer is 409 `already_answered` with `answeredBy: "analyst"`.',
        params: RfiParams,
        body: AdminAnswerBody,
        response: ANSWER_RESPONSES,
      },
    },
    async (request) => answerAsAnalyst(ctx, request.params.caseId, request.params.rfiId, request.body),
  );

  operator.get(
    "/admin/cases/:caseId/documents/:uploadId",
    {
      operationId: "downloadDocument",
      summary: "Download an uploaded document",
      description:
        "The stored bytes with their stored content type, as an attachment. The service never inspects " +
        "document content: open it with the care due to any file from outside.",
      params: Type.Object({ caseId: Type.String(), uploadId: Type.String() }),
      response: {
        200: {
          description: "The document's bytes, with its stored content type",
          content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } },
        },
        409: errorResponse(
          "`document_replaced`: the stored bytes were written again after the document was attached",
          "rfi",
        ),
        503: errorResponse("`unavailable`: document storage cannot be reached", "rfi"),
      },
    },
    async (request, reply) => {
      const doc = await openDocument(ctx, request.params.caseId, request.params.uploadId);
      return (
        reply
          .type(doc.contentType)
          .header("content-length", doc.sizeBytes)
          .header("content-disposition", contentDisposition(doc.filename))
          .header("x-content-type-options", "nosniff")
          .header("cache-control", "private, no-store")
          // Streamed; the schema documents the same bytes as a binary string.
          .send(doc.stream as unknown as string)
      );
    },
  );
}
