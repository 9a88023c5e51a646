import { Type } from "typebox";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { routeGroup } from "../../platform/route-group.js";
import { partnerOf } from "../auth/index.js";
import { invokeDurableAction, invokePendingAction, listDurableActions } from "./actions.service.js";

const ErrorBody = Type.Object(
  {
    error: Type.String(),
    details: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
  },
  { additionalProperties: true },
);

const ActionBody = Type.Optional(
  Type.Object(
    {
      params: Type.Optional(Type.Object({}, { additionalProperties: true, description: "Action-specific" })),
    },
    { additionalProperties: false, description: "An empty body is valid for actions without parameters" },
  ),
);

const Output = Type.Object({ output: Type.Object({}, { additionalProperties: true }) });

/** The answers of an action call: its output, or an error (410 where a handle can expire). */
function actionResponses(...extra: 410[]) {
  const errors = [400, 401, 403, 404, 409, ...extra, 502].map((status) => [status, ErrorBody] as const);
  return { 200: Output, ...Object.fromEntries(errors) };
}

/** An action without parameters may be posted with no body at all. */
async function emptyBodyIsEmptyObject(request: { body: unknown }): Promise<void> {
  if (request.body === undefined || request.body === null) request.body = {};
}

export function actionsRoutes(app: App, ctx: AppContext): void {
  const read = routeGroup(app, ["durable actions"], { scope: "cases:read" });

  app.post(
    "/pending/:handle/actions/:actionId",
    {
      config: { scope: "cases:callback" },
      preValidation: emptyBodyIsEmptyObject,
      schema: {
        tags: ["paused nodes"],
        operationId: "invokePendingAction",
        summary: "Invoke an action on a paused provider node; the node stays paused",
        description:
          "`handle` is the `pendingHandle` of `GET /cases/{caseId}/pending`. Not idempotent: each call is a " +
          "vendor call. 404: unknown handle, or an action the node does not offer; 409: the node is no longer " +
          "paused; 410: the handle is past its `expiresAt`; 400: bad params; 502: the provider failed.",
        params: Type.Object({ handle: Type.String(), actionId: Type.String() }),
        body: ActionBody,
        response: actionResponses(410),
      },
    },
    async (request) => {
      const key = partnerOf(request);
      return invokePendingAction(
        ctx,
        { tenantId: key.tenantId, actor: `apikey:${key.keyId}` },
        request.params.handle,
        { actionId: request.params.actionId, params: (request.body.params ?? {}) as Record<string, unknown> },
      );
    },
  );

  read.get(
    "/cases/:caseId/actions",
    {
      operationId: "listDurableActions",
      summary: "The durable actions of the brokers that ran on the case",
      description: "Valid after the decision too. 404: unknown case.",
      params: Type.Object({ caseId: Type.String() }),
      response: {
        200: Type.Object({
          actions: Type.Array(
            Type.Object({ brokerId: Type.String(), id: Type.String(), label: Type.String() }),
          ),
        }),
        401: ErrorBody,
        403: ErrorBody,
        404: ErrorBody,
      },
    },
    async (request) => ({
      actions: await listDurableActions(ctx, partnerOf(request).tenantId, request.params.caseId),
    }),
  );

  app.post(
    "/cases/:caseId/actions/:brokerId/:action",
    {
      config: { scope: "cases:callback" },
      preValidation: emptyBodyIsEmptyObject,
      schema: {
        tags: ["durable actions"],
        operationId: "invokeDurableAction",
        summary: "Invoke a durable action of a broker that ran on the case",
        description:
          "Not idempotent: a retry creates a new artifact (a new share token); use the returned value. " +
          "404: unknown case, a broker that did not run on the case, or an unknown action; 409: the case has no " +
          "external customer id to re-resolve the vendor's applicant; 400: bad params; 502: the provider failed.",
        params: Type.Object({ caseId: Type.String(), brokerId: Type.String(), action: Type.String() }),
        body: ActionBody,
        response: actionResponses(),
      },
    },
    async (request) => {
      const key = partnerOf(request);
      const { caseId, brokerId, action } = request.params;
      return invokeDurableAction(
        ctx,
        { tenantId: key.tenantId, actor: `apikey:${key.keyId}` },
        caseId,
        brokerId,
        { actionId: action, params: (request.body.params ?? {}) as Record<string, unknown> },
      );
    },
  );
}
