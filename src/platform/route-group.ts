import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type {
  ContextConfigDefault,
  FastifyContextConfig,
  FastifySchema,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
  RouteGenericInterface,
  RouteHandlerMethod,
} from "fastify";
import type { App } from "./app-types.js";

/** A route's handler, its request and replies typed by the route's schema. */
export type RouteHandler<S extends FastifySchema> = RouteHandlerMethod<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  RouteGenericInterface,
  ContextConfigDefault,
  S,
  TypeBoxTypeProvider
>;

/** Declares one route of the group: its path, its schema (without the group's tags), its handler. */
export type DeclareRoute = <S extends FastifySchema>(
  path: string,
  schema: S,
  handler: RouteHandler<S>,
) => void;

/** Routes that share their OpenAPI tags and their access, declared by method. */
export interface RouteGroup {
  get: DeclareRoute;
  post: DeclareRoute;
  put: DeclareRoute;
  patch: DeclareRoute;
  delete: DeclareRoute;
}

/**
 * Routes under the OpenAPI `tags` with the same `config`: an operator's (`{ admin: true }`) or
 * a partner's with one scope (`{ scope: "cases:read" }`). The standard responses, security and
 * scope of each follow from the config as for any route (`withStandardResponses`).
 */
export function routeGroup(app: App, tags: readonly string[], config: FastifyContextConfig): RouteGroup {
  const declare =
    (method: "get" | "post" | "put" | "patch" | "delete"): DeclareRoute =>
    (path, schema, handler) => {
      app[method](path, { config: { ...config }, schema: { tags, ...schema } }, handler as never);
    };
  return {
    get: declare("get"),
    post: declare("post"),
    put: declare("put"),
    patch: declare("patch"),
    delete: declare("delete"),
  };
}
