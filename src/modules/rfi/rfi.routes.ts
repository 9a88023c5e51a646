import { Type } from "typebox";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { errorResponse } from "../../platform/openapi.js";
import { routeGroup } from "../../platform/route-group.js";
import { partnerBy, partnerOf } from "../auth/index.js";
import { rfiAudit } from "./rfi.audit.js";
import { RFI_LIMITS } from "./rfi.limits.js";
import { AnswerBody, MintBody, RaiseBody } from "./rfi.schemas.js";
import { getRequest, listRequestsOfCase, raiseRequest } from "./rfi.service.js";
import { ANSWER_RESPONSES, InformationRequestSchema, UploadSlotSchema } from "./rfi.views.js";
import { answerRequest } from "./rfi-answer.service.js";
import { ANSWER_VALUES } from "./rfi-answer.validation.js";
import { mintUploadSlot } from "./uploads.service.js";

const CaseParams = Type.Object({ caseId: Type.String() });
const RfiParams = Type.Object({ caseId: Type.String(), rfiId: Type.String() });

const RFI_ERRORS = "Errors are `RFIError` bodies: `{error: <code>, message, ...}`.";

/** The partner routes of information requests; every error is an RFIError body. */
export function rfiRoutes(app: App, ctx: AppContext): void {
  const write = routeGroup(app, ["information requests"], { scope: "cases:write", errorStyle: "rfi" });
  const read = routeGroup(app, ["information requests"], { scope: "cases:read", errorStyle: "rfi" });

  write.post(
    "/cases/:caseId/rfi",
    {
      operationId: "raiseInformationRequest",
      summary: "Raise an information request on a case",
      description: [
        "Emits `case.rfi_requested` (`requested_by` `apikey:<keyId>`, `source` `api`); your own",
        "systems send the e-mail from it. With `expiresAt` the request expires at that deadline.",
        "409 `case_terminal` or `dry_run` when the case cannot take requests, 409",
        `\`rfi_limit_reached\` when it has ${RFI_LIMITS.pendingPerCase} pending requests already.`,
        RFI_ERRORS,
      ].join(" "),
      params: CaseParams,
      body: RaiseBody,
      response: {
        201: InformationRequestSchema,
        409: errorResponse(
          "`case_terminal` (closed or failed case), `dry_run`, or `rfi_limit_reached` (too many pending)",
          "rfi",
        ),
      },
    },
    async (request, reply) => {
      const key = partnerOf(request);
      const view = await raiseRequest(
        ctx,
        key.tenantId,
        { kind: "apikey", tenantId: key.tenantId, keyId: key.keyId },
        request.params.caseId,
        request.body,
      );
      return reply.status(201).send(view);
    },
  );

  read.get(
    "/cases/:caseId/rfi",
    {
      operationId: "listInformationRequests",
      summary: "List a case's information requests, oldest first, with answers and documents",
      description: "Oldest first, each with its status, attribution, answer and documents.",
      params: CaseParams,
      response: { 200: Type.Object({ informationRequests: Type.Array(InformationRequestSchema) }) },
    },
    async (request) => ({
      informationRequests: await listRequestsOfCase(ctx, partnerOf(request).tenantId, request.params.caseId),
    }),
  );

  read.get(
    "/cases/:caseId/rfi/:rfiId",
    {
      operationId: "getInformationRequest",
      summary: "Read an information request with its answer and documents",
      description:
        "The request with its status, attribution, answer (fields and documents) and the upload slots minted so far.",
      params: RfiParams,
      response: { 200: InformationRequestSchema },
    },
    async (request) =>
      getRequest(ctx, partnerOf(request).tenantId, request.params.caseId, request.params.rfiId),
  );

  app.post(
    "/cases/:caseId/rfi/:rfiId/documents",
    {
      config: { scope: "cases:write", errorStyle: "rfi" },
      // The body is checked by the service, after 404 and 409, like endpoint 13's.
      attachValidation: true,
      schema: {
        tags: ["information requests"],
        operationId: "createUploadSlot",
        summary: "Mint an upload slot (step 1 of answering)",
        description: [
          "Call once per file. Then `PUT` the file to `uploadUrl` before `expiresAt` with exactly the",
          "declared `Content-Type` and `Content-Length` and `If-None-Match: *`.",
          `At most ${RFI_LIMITS.slotsPerRequest} slots per request and ${RFI_LIMITS.slotsPerCase} per case,`,
          "every minted slot counted for good (422 `upload_limit_reached`). 400 `invalid_request` for a",
          "bad filename, content type or size; 409 `not_pending`, `case_terminal`, `dry_run`.",
          RFI_ERRORS,
        ].join(" "),
        params: RfiParams,
        body: MintBody,
        response: {
          201: UploadSlotSchema,
          409: errorResponse("`not_pending`, `case_terminal` or `dry_run`", "rfi"),
          422: errorResponse("`upload_limit_reached`: 30 slots per request or 100 per case", "rfi"),
          503: errorResponse("`unavailable`: document storage cannot be reached", "rfi"),
        },
      },
    },
    async (request, reply) => {
      const key = partnerOf(request);
      const { caseId, rfiId } = request.params;
      return reply.status(201).send(await mintUploadSlot(ctx, key.tenantId, caseId, rfiId, request.body));
    },
  );

  app.post(
    "/cases/:caseId/rfi/:rfiId/response",
    {
      config: { scope: "cases:write", errorStyle: "rfi", guardDefers: ANSWER_VALUES },
      // The contract puts 404 and 409 before any check of the body: the service checks it.
      attachValidation: true,
      schema: {
        tags: ["information requests"],
        operationId: "answerInformationRequest",
        summary: "Answer an information request (step 2), all or nothing",
        description: [
          "At least one field or one document. Checked in this order: 401, 403, 400 invalid JSON, 404,",
          "409 (`dry_run`, `case_terminal`, `already_answered`, `not_pending`), 400 structure, 422",
          "(`invalid_field_key`, `invalid_field_value`, `fields_too_large`), 422 `too_many_documents`,",
          "422 `document_not_uploaded`. Emits `case.rfi_answered`.",
          RFI_ERRORS,
        ].join(" "),
        params: RfiParams,
        body: AnswerBody,
        response: ANSWER_RESPONSES,
      },
    },
    async (request) => {
      const key = partnerOf(request);
      const { caseId, rfiId } = request.params;
      return answerRequest(
        ctx,
        key.tenantId,
        caseId,
        rfiId,
        { kind: "apikey", keyId: key.keyId },
        request.body,
        rfiAudit.answer(partnerBy(request), rfiId),
      );
    },
  );
}
