import { Type } from "typebox";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { errorResponse } from "../../platform/openapi.js";
import { routeGroup } from "../../platform/route-group.js";
import { DECISION_VALUES } from "../case-model/index.js";
import { operatorActor } from "../users/index.js";
import {
  closeCase,
  getCaseAsOperator,
  listCasesAsOperator,
  overrideDecision,
} from "./cases.admin.service.js";
import {
  AdminCaseListQuery,
  AdminCaseRecord,
  AdminCaseSummary,
  CaseRecord,
  CaseSubmission,
} from "./cases.schemas.js";
import { type CaseSubmissionInput, dryRunCase, submissionProblems } from "./cases.service.js";

interface DryRunParams {
  tenantId: string;
  workflowId: string;
  version: number;
}

const Actor = Type.String({ minLength: 1, maxLength: 200, description: "The analyst's user id" });

/** A whole case submission; the path names the workflow and version, so those fields are ignored. */
const DryRunSubmission = Type.Object(
  {
    ...CaseSubmission.properties,
    workflowId: Type.Optional(Type.Unknown({ description: "Ignored: the path names the workflow" })),
    workflowVersion: Type.Optional(Type.Unknown({ description: "Ignored: the path names the version" })),
    idempotencyKey: Type.Optional(Type.Unknown({ description: "Ignored: every dry run is a new case" })),
  },
  { additionalProperties: false },
);

const ErrorBody = Type.Object(
  {
    error: Type.String(),
    code: Type.Optional(Type.String()),
    details: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
  },
  { additionalProperties: true },
);

export function casesAdminRoutes(app: App, ctx: AppContext): void {
  const operator = routeGroup(app, ["operator: cases"], { admin: true });

  operator.post(
    "/admin/cases/:caseId/decision",
    {
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
    async (request) =>
      overrideDecision(ctx, request.params.caseId, request.body, operatorActor(request.body.actor)),
  );

  operator.post(
    "/admin/cases/:caseId/close",
    {
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
    async (request) => closeCase(ctx, request.params.caseId, request.body, operatorActor(request.body.actor)),
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
          "Takes a whole case submission (its `workflowId`, `workflowVersion` and `idempotencyKey` are " +
          "ignored). 201 with the case and its trace; with `?wait=true` the answer comes once the case " +
          "has left `received` and `running` (at most 30 s), so the trace shows the whole run. Its " +
          "events are recorded, never delivered. 400 lists every invalid field; 401 without the " +
          "operator token; 404 for an unknown tenant, workflow or version.",
        params: Type.Object({
          tenantId: Type.String(),
          workflowId: Type.String(),
          version: Type.Integer({ minimum: 1 }),
        }),
        querystring: Type.Object(
          { wait: Type.Optional(Type.Boolean({ default: false })) },
          { additionalProperties: false },
        ),
        body: DryRunSubmission,
        response: { 201: AdminCaseRecord, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody },
      },
    },
    async (request, reply) => {
      const { tenantId, workflowId, version } = request.params;
      const {
        tenantId: _ignored,
        idempotencyKey: _none,
        workflowId: _w,
        workflowVersion: _v,
        ...input
      } = request.body;
      const submission = input as Omit<CaseSubmissionInput, "workflowId" | "workflowVersion">;
      const wait = request.query.wait === true;
      return reply
        .status(201)
        .send(await dryRunCase(ctx, tenantId, workflowId, version, submission, request.id, { wait }));
    },
  );

  operator.get(
    "/admin/cases",
    {
      summary: "List cases across tenants, or one tenant's, newest first",
      description:
        "The filters of `GET /cases`, plus `tenantId` and `dryRun` (dry-run cases are left out unless " +
        "`dryRun=true`, which lists only them). Keyset-paged: pass `nextCursor` back as `cursor`. " +
        "400 for a bad parameter or cursor; 401 without the operator token.",
      operationId: "listCasesAsOperator",
      querystring: AdminCaseListQuery,
      response: {
        200: Type.Object({
          cases: Type.Array(AdminCaseSummary),
          nextCursor: Type.Union([Type.String(), Type.Null()]),
        }),
        400: ErrorBody,
        401: ErrorBody,
      },
    },
    async (request) => listCasesAsOperator(ctx, request.query),
  );

  operator.get(
    "/admin/cases/:caseId",
    {
      summary: "Read a case with its tenant and the trace of its workflow run",
      description:
        "The record of `GET /cases/{caseId}` plus `tenantId` and `trace`: every node the case went " +
        "through, in order, with why it went where it went. 401 without the operator token; 404 for " +
        "an unknown case.",
      operationId: "getCaseAsOperator",
      params: Type.Object({ caseId: Type.String() }),
      response: { 200: AdminCaseRecord, 401: ErrorBody, 404: ErrorBody },
    },
    async (request) => getCaseAsOperator(ctx, request.params.caseId),
  );
}
