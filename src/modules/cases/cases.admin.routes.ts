import { Type } from "typebox";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { badRequest, describeProblems } from "../../platform/errors.js";
import { errorResponse } from "../../platform/openapi.js";
import { DECISION_VALUES } from "./case-status.js";
import { closeCase, overrideDecision } from "./cases.admin.service.js";
import { CaseRecord, CaseSubmission } from "./cases.schemas.js";
import { type CaseSubmissionInput, dryRunCase, submissionProblems } from "./cases.service.js";

interface DryRunParams {
  tenantId: string;
  workflowId: string;
  version: number;
}

const Actor = Type.String({ minLength: 1, maxLength: 200, description: "The analyst's user id" });
const { workflowId, workflowVersion, ...submissionFields } = CaseSubmission.properties;
// A dry run may send the submission it tests as is: its workflow and version, when given, must
// be the path's.
const dryRunFields = {
  ...submissionFields,
  workflowId: Type.Optional(workflowId),
  workflowVersion: Type.Optional(workflowVersion),
};

export function casesAdminRoutes(app: App, ctx: AppContext): void {
  app.post(
    "/admin/cases/:caseId/decision",
    {
      config: { admin: true },
      schema: {
        tags: ["operator: cases"],
        operationId: "overrideDecision",
        summary: "Override a case's decision (appends to the history; emits case.decision_overridden)",
        description:
          "Appends the analyst's decision to `decisionHistory`, makes it the current one and emits `case.decision_overridden`. 409 when the case has no decision to override or is closed.",
        params: Type.Object({ caseId: Type.String() }),
        body: Type.Object(
          {
            value: Type.Enum([...DECISION_VALUES]),
            actor: Actor,
            reason: Type.Optional(Type.String({ maxLength: 2000 })),
          },
          { additionalProperties: false },
        ),
        response: {
          200: CaseRecord,
          409: errorResponse("The case is closed, or has no decision to override"),
        },
      },
    },
    async (request) => overrideDecision(ctx, request.params.caseId, request.body),
  );

  app.post(
    "/admin/cases/:caseId/close",
    {
      config: { admin: true },
      schema: {
        tags: ["operator: cases"],
        operationId: "closeCase",
        summary: "Close a case for good",
        description: "A closed case is terminal: it takes no more actions, answers or overrides.",
        params: Type.Object({ caseId: Type.String() }),
        body: Type.Object({ actor: Actor }, { additionalProperties: false }),
        response: {
          200: CaseRecord,
          409: errorResponse("The case is closed, or has no decision to override"),
        },
      },
    },
    async (request) => closeCase(ctx, request.params.caseId, request.body),
  );

  app.post(
    "/admin/tenants/:tenantId/workflows/:workflowId/versions/:version/dry-run",
    {
      config: {
        admin: true,
        bodyProblems: (request) => {
          const { tenantId, workflowId, version } = request.params as DryRunParams;
          return submissionProblems(ctx, tenantId, request.body, { workflowId, version });
        },
      },
      schema: {
        tags: ["operator: workflows"],
        operationId: "dryRunCase",
        summary: "Run a case submission on a version, published or not; the case carries dryRun: true",
        description:
          "The body is a case submission (its `workflowId` and `workflowVersion`, when given, must be the path's). The case runs like any other but sends no webhooks and is left out of `GET /cases`.",
        params: Type.Object({
          tenantId: Type.String(),
          workflowId: Type.String(),
          version: Type.Integer({ minimum: 1 }),
        }),
        body: Type.Object(dryRunFields, { additionalProperties: false }),
        response: { 201: CaseRecord },
      },
    },
    async (request, reply) => {
      const { tenantId, workflowId, version } = request.params;
      const { idempotencyKey: _none, workflowId: named, workflowVersion: numbered, ...input } = request.body;
      const mismatches = [
        ...(named !== undefined && named !== workflowId
          ? [{ path: "workflowId", message: `must be the path's workflow "${workflowId}" when given` }]
          : []),
        ...(numbered !== undefined && numbered !== version
          ? [{ path: "workflowVersion", message: `must be the path's version ${version} when given` }]
          : []),
      ];
      if (mismatches.length > 0)
        throw badRequest(describeProblems("invalid dry run", mismatches), mismatches);
      const submission = input as Omit<CaseSubmissionInput, "workflowId" | "workflowVersion">;
      return reply
        .status(201)
        .send(await dryRunCase(ctx, tenantId, workflowId, version, submission, request.id));
    },
  );
}
