import { Type } from "typebox";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { routeGroup } from "../../platform/route-group.js";
import { partnerBy } from "../auth/index.js";
import { setCustomerAttributes } from "./attributes.service.js";

const Scalar = Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]);

export function attributesRoutes(app: App, ctx: AppContext): void {
  const write = routeGroup(app, ["customer attributes"], { scope: "attributes:write" });

  write.post(
    "/customer-attributes",
    {
      operationId: "setCustomerAttributes",
      summary: "Merge a customer's attributes (null removes one); workflows read them as customer.attributes",
      body: Type.Object({
        externalCustomerId: Type.String({ minLength: 1, maxLength: 256 }),
        attributes: Type.Record(Type.String(), Scalar),
        tenantId: Type.Optional(Type.Unknown({ description: "Ignored: the tenant comes from the API key" })),
      }),
      response: {
        200: Type.Object({
          externalCustomerId: Type.String(),
          attributes: Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean()])),
          updatedAt: Type.String({ format: "date-time" }),
        }),
      },
    },
    async (request) => {
      const { externalCustomerId, attributes } = request.body;
      return setCustomerAttributes(ctx, partnerBy(request), externalCustomerId, attributes);
    },
  );
}
