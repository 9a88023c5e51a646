import type { Readable } from "node:stream";
import { Type } from "typebox";
import type { App } from "../../platform/app-types.js";
import { UploadAborted } from "../../platform/blobs/disk-store.js";
import type { PutTarget, UploadReceiver } from "../../platform/blobs/index.js";
import type { AppContext } from "../../platform/context.js";
import { RFI_LIMITS } from "./rfi.limits.js";

declare module "fastify" {
  interface FastifyRequest {
    uploadTarget?: PutTarget;
  }
}

function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(", ") : value;
}

/**
 * The signed upload URL of a store that receives its own uploads (the embedded disk store).
 * Its own encapsulated scope: the body is never parsed (so the JSON body limit does not apply)
 * but streamed to the store, and every check of the URL and headers runs before a byte of it is
 * read. The URL's query (which holds the signature) is never logged: the logger keeps paths only.
 */
export async function uploadRoutes(app: App, ctx: AppContext, receiver: UploadReceiver): Promise<void> {
  await app.register((scope, _options, done) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", (_request, payload, done) => done(null, payload));
    scope.decorateRequest("uploadTarget", undefined);

    scope.put(
      `${receiver.routePrefix}/*`,
      {
        config: { errorStyle: "rfi" },
        bodyLimit: RFI_LIMITS.fileMaxBytes,
        schema: {
          // The signed upload URL is opaque to partners (UploadSlot.uploadUrl documents it): it is
          // not an operation of the API and its path is the store's business.
          hide: true,
          tags: ["information requests"],
          summary: "Upload a document to a minted slot (the uploadUrl)",
          description: [
            "Send exactly the declared `Content-Type` and `Content-Length` and `If-None-Match: *`, before the",
            "slot's `expiresAt`. 200 once the object is stored. 403: wrong signature, content type or length,",
            "no `If-None-Match: *`, or expired. 400: a body whose length differs from the declared size.",
            "412: the object already exists (uploads are create-only). Nothing partial is ever stored.",
          ].join(" "),
          querystring: Type.Object({
            expires: Type.Optional(Type.String()),
            contentType: Type.Optional(Type.String()),
            contentLength: Type.Optional(Type.String()),
            signature: Type.Optional(Type.String()),
          }),
        },
        onRequest: async (request, reply) => {
          try {
            request.uploadTarget = await receiver.authorize(
              ctx.db,
              (request.params as { "*": string })["*"],
              request.query as Record<string, unknown>,
              {
                contentType: header(request.headers["content-type"]),
                contentLength: header(request.headers["content-length"]),
                ifNoneMatch: header(request.headers["if-none-match"]),
                transferEncoding: header(request.headers["transfer-encoding"]),
              },
            );
          } catch (err) {
            // The body was not read: close rather than drain whatever the client still sends.
            reply.header("connection", "close");
            throw err;
          }
        },
      },
      async (request, reply) => {
        const target = request.uploadTarget as PutTarget;
        try {
          await receiver.receive(target, request.body as Readable);
        } catch (err) {
          if (err instanceof UploadAborted) {
            request.log.info({ uploadKey: target.key }, "upload aborted by the client; nothing stored");
            reply.hijack();
            request.raw.destroy();
            return;
          }
          reply.header("connection", "close");
          throw err;
        }
        return reply.status(200).send();
      },
    );
    done();
  });
}
