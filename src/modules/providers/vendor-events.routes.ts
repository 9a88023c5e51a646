import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { receiveVendorEvent } from "./vendor-events.service.js";

const ErrorBody = Type.Object({ error: Type.String() }, { additionalProperties: true });

/**
 * The inbound webhook URL vendors post their events to. The digest is computed over the exact
 * bytes received, so this route reads its body raw, in a scope of its own with no JSON parser.
 */
export async function vendorEventsRoutes(app: App, ctx: AppContext): Promise<void> {
  await app.register((plugin, _options, done) => {
    const scope = plugin.withTypeProvider<TypeBoxTypeProvider>();
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", { parseAs: "buffer" }, (_request, body, done) => done(null, body));
    scope.post(
      "/providers/:brokerId/webhooks/:token",
      {
        schema: {
          tags: ["providers: vendor webhooks"],
          operationId: "receiveVendorEvent",
          summary: "A vendor's event (the `inboundWebhookUrl` of a provider configuration)",
          description:
            "Authenticated by the vendor's signature of the raw body (Sumsub: `X-Payload-Digest`, HMAC-SHA256 " +
            "under the configuration's `webhookSecret`). 200 once the event is stored (a body received " +
            "before is answered 200 and not stored again); 401 on a bad digest, with nothing recorded; 404 on " +
            "an unknown URL; 400 when the body is not one of the vendor's events.",
          params: Type.Object({ brokerId: Type.String(), token: Type.String() }),
          response: {
            200: Type.Object({ received: Type.Literal(true), duplicate: Type.Boolean() }),
            400: ErrorBody,
            401: ErrorBody,
            404: ErrorBody,
          },
        },
      },
      async (request) =>
        receiveVendorEvent(
          ctx,
          request.params.brokerId,
          request.params.token,
          Buffer.isBuffer(request.body) ? request.body : undefined,
          request.headers,
        ),
    );
    done();
  });
}
