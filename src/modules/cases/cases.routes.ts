import { Type } from "typebox";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { routeGroup } from "../../platform/route-group.js";
import { partnerOf } from "../auth/index.js";
import { CaseList, CaseListQuery, CaseRecord, CaseSubmission, SubmissionResponse } from "./cases.schemas.js";
import {
  type CaseSubmissionInput,
  getCase,
  listTenantCases,
  submissionProblems,
  submitCase,
} from "./cases.service.js";

export function casesRoutes(app: App, ctx: AppContext): void {
  const read = routeGroup(app, ["cases"], { scope: "cases:read" });

  app.post(
    "/cases",
    {
      config: {
        scope: "cases:write",
        keyConfirmedByWrite: true,
        bodyProblems: (request) => submissionProblems(ctx, partnerOf(request).tenantId, request.body),
      },
      schema: {
        tags: ["cases"],
        operationId: "submitCase",
        summary: "Submit a case",
        description:
          "201 with a new case. With an `idempotencyKey` the tenant has used before, 200 with that case " +
          "(its current status) and no new case. 400 lists every invalid field.",
        body: CaseSubmission,
        response: { 200: SubmissionResponse, 201: SubmissionResponse },
      },
    },
    async (request, reply) => {
      const key = partnerOf(request);
      const { tenantId: _ignored, ...input } = request.body;
      const result = await submitCase(ctx, key, input as CaseSubmissionInput, request.id);
      return reply.status(result.created ? 201 : 200).send(result.body);
    },
  );

  read.get(
    "/cases/:caseId",
    {
      operationId: "getCase",
      summary: "Read a case with its decision, history, tags and information requests",
      description:
        "The case's status, subject, payload, the decision with its whole history, the workflow result, tags and information requests.",
      params: Type.Object({ caseId: Type.String() }),
      response: { 200: CaseRecord },
    },
    async (request) => getCase(ctx, partnerOf(request).tenantId, request.params.caseId),
  );

  read.get(
    "/cases",
    {
      operationId: "listCases",
      summary: "List cases, newest first, with keyset paging",
      description: "Pass `nextCursor` back as `cursor` for the next page; it is null on the last page.",
      querystring: CaseListQuery,
      response: { 200: CaseList },
    },
    async (request) => listTenantCases(ctx, partnerOf(request).tenantId, request.query),
  );
}
