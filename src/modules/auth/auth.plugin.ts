import type { FastifyInstance, FastifyRequest } from "fastify";
import type { AppContext } from "../../platform/context.js";
import { safeEqual } from "../../platform/crypto.js";
import { AppError } from "../../platform/errors.js";
import { type AuthenticatedKey, authenticate, confirmKey } from "./api-keys.service.js";
import { RateLimiter } from "./rate-limiter.js";
import type { Scope } from "./scopes.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /** The scope a partner route requires; its presence makes the route a partner route. */
    scope?: Scope;
    /** An operator route: needs the admin bearer token. */
    admin?: boolean;
    /**
     * A partner route whose write confirms the key in its own statement (decision 0028): a key
     * the process found live before is let in unconfirmed, and any answer but the confirmed
     * write's waits for a lookup of the key (401 if it is gone).
     */
    keyConfirmedByWrite?: boolean;
  }
  interface FastifyRequest {
    apiKey?: AuthenticatedKey;
  }
}

/** The authenticated key of a partner route; only callable where `config.scope` is set. */
export function partnerOf(request: FastifyRequest): AuthenticatedKey {
  if (!request.apiKey) throw new Error("partnerOf() called on a route without a scope");
  return request.apiKey;
}

/** Who a partner route's change is by, as the audit log records it: `apikey:<keyId>` of its tenant. */
export function partnerBy(request: FastifyRequest): { tenantId: string; actor: string } {
  const key = partnerOf(request);
  return { tenantId: key.tenantId, actor: `apikey:${key.keyId}` };
}

/**
 * One hook for every route: partner routes need a live key with the route's scope (401, then
 * 403, then 429), operator routes the admin bearer token. It runs before the body is read, so a
 * caller without credentials learns nothing about the body's validity.
 */
export function installAuth(app: FastifyInstance, ctx: AppContext): void {
  const limiter = new RateLimiter();
  app.decorateRequest("apiKey", undefined);
  app.addHook("onRequest", async (request, reply) => {
    const config = request.routeOptions.config;
    if (config?.admin) {
      const header = request.headers.authorization;
      const token = ctx.config.adminToken;
      // The scheme is case-insensitive (RFC 9110 section 11.1); the token is not.
      const presented = header && /^bearer /i.test(header) ? header.slice(7) : undefined;
      if (!token || !presented || !safeEqual(presented, token)) {
        throw new AppError(
          "unauthenticated",
          "missing or invalid operator token: send Authorization: Bearer <token>",
        );
      }
      return;
    }
    const scope = config?.scope;
    if (!scope) return;
    const raw = request.headers["x-api-key"];
    const key = await authenticate(
      ctx,
      Array.isArray(raw) ? raw[0] : raw,
      config.keyConfirmedByWrite === true,
    );
    if (!key.scopes.has(scope)) throw new AppError("forbidden", `API key lacks the ${scope} scope`);
    if (key.rateLimit) {
      const decision = limiter.take(key.keyId, key.rateLimit);
      reply.header(
        "ratelimit",
        `limit=${key.rateLimit.burst}, remaining=${decision.remaining}, reset=${decision.resetSeconds}`,
      );
      if (!decision.allowed) {
        throw new AppError("rate_limited", "rate limit exceeded for this API key", {
          headers: { "retry-after": String(decision.retryAfterSeconds) },
        });
      }
    }
    request.apiKey = key;
  });
  // A key let in unconfirmed whose write did not confirm it is looked up before the answer goes
  // out: a key deleted since the process last saw it gets 401, whatever the route answered.
  app.addHook("onSend", async (request, reply, payload) => {
    const key = request.apiKey;
    if (!key || key.confirmed) return payload;
    try {
      await confirmKey(ctx, key);
      return payload;
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== "unauthenticated") throw err;
      reply.removeHeader("ratelimit");
      reply.code(401).header("content-type", "application/json; charset=utf-8");
      return JSON.stringify({ error: err.message, code: err.code });
    }
  });
}
