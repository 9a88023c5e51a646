import { Type } from "typebox";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { errorResponse } from "../../platform/openapi.js";
import { routeGroup } from "../../platform/route-group.js";
import { partnerOf } from "../auth/index.js";
import { deliverCallback, listPausedNodes } from "./callbacks.service.js";

const PausedNode = Type.Object({
  nodeId: Type.String(),
  providerId: Type.Union([Type.String(), Type.Null()]),
  pendingHandle: Type.String({ description: "Opaque (UUID-shaped)" }),
  expiresAt: Type.Union([Type.String({ format: "date-time" }), Type.Null()]),
  availableActions: Type.Array(
    Type.Object({ id: Type.String(), label: Type.String(), resolvesAwait: Type.Boolean() }),
  ),
});

export function engineRoutes(app: App, ctx: AppContext): void {
  const read = routeGroup(app, ["paused nodes"], { scope: "cases:read" });
  const callback = routeGroup(app, ["paused nodes"], { scope: "cases:callback" });

  read.get(
    "/cases/:caseId/pending",
    {
      operationId: "listPendingNodes",
      summary: "The case's workflow nodes paused awaiting an external system",
      description: "Each paused node with its `pendingHandle`, the actions it offers and when it expires.",
      params: Type.Object({ caseId: Type.String() }),
      response: { 200: Type.Object({ pending: Type.Array(PausedNode) }) },
    },
    async (request) => ({
      pending: await listPausedNodes(ctx, partnerOf(request).tenantId, request.params.caseId),
    }),
  );

  callback.post(
    "/cases/:caseId/callbacks/:callbackRef",
    {
      operationId: "deliverCallback",
      summary: "Deliver an external callback; the body becomes the paused node's output",
      description:
        "202 when accepted. 404 unknown case or callback; 409 already delivered; 410 past `expiresAt`; " +
        "400 when the body is not a JSON object.",
      params: Type.Object({ caseId: Type.String(), callbackRef: Type.String() }),
      body: Type.Object({}, { additionalProperties: true, description: "A JSON object, node-specific" }),
      response: {
        202: Type.Object({
          caseId: Type.String(),
          nodeId: Type.String(),
          status: Type.Literal("accepted"),
        }),
        409: errorResponse("The callback was delivered already"),
        410: errorResponse("The callback is past its `expiresAt`"),
      },
    },
    async (request, reply) => {
      const key = partnerOf(request);
      const body = request.body as Record<string, unknown>;
      const { caseId, callbackRef } = request.params;
      return reply.status(202).send(await deliverCallback(ctx, key.tenantId, caseId, callbackRef, body));
    },
  );
}
