import { Type } from "typebox";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { DECISION_VALUES } from "./case-status.js";
import { closeCase, overrideDecision } from "./cases.admin.service.js";
import { CaseRecord, CaseSubmission } from "./cases.schemas.js";
import { type CaseSubmissionInput, dryRunCase } from "./cases.service.js";

const Actor = Type.String({ minLength: 1, maxLength: 200, description: "The analyst's user id" });
const { workflowId: _w, workflowVersion: _v, ...dryRunFields } = CaseSubmission.properties;

export function casesAdminRoutes(app: App, ctx: AppContext): void {
  app.post(
    "/admin/cases/:caseId/decision",
    {
      config: { admin: true },
      schema: {
        tags: ["operator: cases"],
        summary: "Override a case's decision (appends to the history; emits case.decision_overridden)",
        params: Type.Object({ caseId: Type.String() }),
        body: Type.Object(
          {
            value: Type.Enum([...DECISION_VALUES]),
            actor: Actor,
            reason: Type.Optional(Type.String({ maxLength: 2000 })),
          },
          { additionalProperties: false },
        ),
        response: { 200: CaseRecord },
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
        summary: "Close a case for good",
        params: Type.Object({ caseId: Type.String() }),
        body: Type.Object({ actor: Actor }, { additionalProperties: false }),
        response: { 200: CaseRecord },
      },
    },
    async (request) => closeCase(ctx, request.params.caseId, request.body),
  );

  app.post(
    "/admin/tenants/:tenantId/workflows/:workflowId/versions/:version/dry-run",
    {
      config: { admin: true },
      schema: {
        tags: ["operator: workflows"],
        summary: "Run a case submission on a version, published or not; the case carries dryRun: true",
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
      const { tenantId: _ignored, idempotencyKey: _none, ...input } = request.body;
      const submission = input as Omit<CaseSubmissionInput, "workflowId" | "workflowVersion">;
      return reply
        .status(201)
        .send(await dryRunCase(ctx, tenantId, workflowId, version, submission, request.id));
    },
  );
}
