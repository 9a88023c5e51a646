import { Type } from "typebox";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { routeGroup } from "../../platform/route-group.js";
import { WORKFLOW_ID_PATTERN } from "./workflow.schema.js";
import { createVersion, getVersion, getWorkflows, publishVersion } from "./workflows.service.js";

const TenantParams = Type.Object({ tenantId: Type.String() });
const WorkflowParams = Type.Object({
  tenantId: Type.String(),
  workflowId: Type.String({ pattern: WORKFLOW_ID_PATTERN }),
});
const VersionParams = Type.Object({
  tenantId: Type.String(),
  workflowId: Type.String({ pattern: WORKFLOW_ID_PATTERN }),
  version: Type.Integer({ minimum: 1, maximum: 2_147_483_647 }),
});

const Timestamp = Type.String({ format: "date-time" });
const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);
const Definition = Type.Object(
  {},
  {
    additionalProperties: true,
    description:
      "A workflow definition: see docs/workflows.md and docs/workflow-definition.schema.json " +
      "(also printed by `cds workflow schema`).",
  },
);

export function workflowsRoutes(app: App, ctx: AppContext): void {
  const operator = routeGroup(app, ["operator: workflows"], { admin: true });

  operator.post(
    "/admin/tenants/:tenantId/workflows/:workflowId/versions",
    {
      operationId: "createWorkflowVersion",
      summary: "Create the next version of a workflow",
      description:
        "Versions count 1, 2, … per workflow and never change once created. A definition with " +
        "problems is refused with 400, every problem listed in `details` as `{path, message}`.",
      params: WorkflowParams,
      body: Definition,
      response: {
        201: Type.Object({ workflowId: Type.String(), version: Type.Integer(), createdAt: Timestamp }),
      },
    },
    async (request, reply) => {
      const { tenantId, workflowId } = request.params;
      return reply.status(201).send(await createVersion(ctx, tenantId, workflowId, request.body));
    },
  );

  operator.post(
    "/admin/tenants/:tenantId/workflows/:workflowId/versions/:version/publish",
    {
      operationId: "publishWorkflowVersion",
      summary: "Publish a version and make it the current one",
      description:
        "New cases that pin no version run on the current one. A published version stays " +
        "pinnable after another becomes current; publishing an older version again makes it current.",
      params: VersionParams,
      response: {
        200: Type.Object({
          workflowId: Type.String(),
          version: Type.Integer(),
          publishedAt: Timestamp,
          current: Type.Literal(true),
        }),
      },
    },
    async (request) => {
      const { tenantId, workflowId, version } = request.params;
      return publishVersion(ctx, tenantId, workflowId, version);
    },
  );

  operator.get(
    "/admin/tenants/:tenantId/workflows",
    {
      operationId: "listWorkflows",
      summary: "List a tenant's workflows with their versions and the current one",
      description:
        "Each workflow with its versions (published or not) and the current one that new cases run on.",
      params: TenantParams,
      response: {
        200: Type.Object({
          workflows: Type.Array(
            Type.Object({
              workflowId: Type.String(),
              currentVersion: Type.Union([Type.Integer(), Type.Null()]),
              versions: Type.Array(
                Type.Object({
                  version: Type.Integer(),
                  createdAt: Timestamp,
                  publishedAt: NullableTimestamp,
                }),
              ),
            }),
          ),
        }),
      },
    },
    async (request) => ({ workflows: await getWorkflows(ctx, request.params.tenantId) }),
  );

  operator.get(
    "/admin/tenants/:tenantId/workflows/:workflowId/versions/:version",
    {
      operationId: "getWorkflowVersion",
      summary: "Show a version with its definition",
      description: "The version's definition as created, whether it is published, and when.",
      params: VersionParams,
      response: {
        200: Type.Object({
          workflowId: Type.String(),
          version: Type.Integer(),
          createdAt: Timestamp,
          publishedAt: NullableTimestamp,
          current: Type.Boolean(),
          definition: Definition,
        }),
      },
    },
    async (request) => {
      const { tenantId, workflowId, version } = request.params;
      return getVersion(ctx, tenantId, workflowId, version);
    },
  );
}
