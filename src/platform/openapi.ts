import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance, RouteOptions } from "fastify";
import { type TSchema, Type } from "typebox";
import type { AppContext } from "./context.js";
import { ERROR_CODES } from "./errors.js";
import EXAMPLES from "./openapi-examples.json" with { type: "json" };

/**
 * The OpenAPI document is built from the route schemas. This module adds what every operation
 * shares, so that no route can forget it: its security and scope, the error statuses its shape
 * implies (401/403/429 for a partner route, 400/413/415 for one that reads a body, 404 for one
 * with a resource in its path), the `X-Request-Id` header on every response, and the named
 * schemas under `components` (every schema with a `title` becomes a `$ref`).
 */

export const ErrorDetail = Type.Object(
  {
    path: Type.String({
      description:
        "The field, as code writes it (`subject.parties[0].role`); a query parameter by name; empty for the body itself",
    }),
    message: Type.String({ description: "What is wrong with it" }),
  },
  { title: "ErrorDetail", additionalProperties: false },
);

export const ErrorBody = Type.Object(
  {
    error: Type.String({ description: "A human-readable message" }),
    code: Type.Enum(ERROR_CODES, { description: "A stable code from the catalogue (docs/errors.md)" }),
    details: Type.Optional(
      Type.Array(ErrorDetail, { description: "Every validation problem of the request" }),
    ),
  },
  {
    title: "Error",
    additionalProperties: false,
    examples: [
      {
        error: "invalid case submission: subject.transaction.currency must be an ISO 4217 currency code",
        code: "invalid_request",
        details: [{ path: "subject.transaction.currency", message: "must be an ISO 4217 currency code" }],
      },
    ],
  },
);

export const RFIErrorBody = Type.Object(
  {
    error: Type.Enum(ERROR_CODES, { description: "A stable machine-readable code" }),
    message: Type.Optional(Type.String({ description: "A human-readable detail" })),
    answeredBy: Type.Optional(Type.String({ description: "`already_answered`: who answered" })),
    answeredAt: Type.Optional(Type.String({ format: "date-time", description: "`already_answered`: when" })),
    uploadId: Type.Optional(
      Type.String({ format: "uuid", description: "`document_not_uploaded`: the slot" }),
    ),
    key: Type.Optional(Type.String({ description: "`invalid_field_key`, `invalid_field_value`: the field" })),
    details: Type.Optional(
      Type.Array(ErrorDetail, { description: "Every validation problem of the request" }),
    ),
  },
  {
    title: "RFIError",
    additionalProperties: false,
    examples: [{ error: "not_pending", message: "the information request is answered" }],
  },
);

const STANDARD_DESCRIPTIONS: Record<number, string> = {
  400: "Invalid request: `details` lists every problem",
  401: "No credentials, or unknown, deleted or expired ones",
  403: "The API key lacks the operation's scope",
  404: "No such resource for this tenant (another tenant's answers the same)",
  409: "The resource's state does not allow this",
  410: "Past its `expiresAt`",
  413: "The JSON body is larger than 1 MiB",
  415: "The body is not `application/json`",
  422: "The answer cannot be accepted",
  429: "Rate limit spent; retry after `Retry-After` seconds",
  502: "An outside provider failed",
  503: "Not ready",
};

const REQUEST_ID_HEADER = {
  "X-Request-Id": {
    type: "string",
    description: "The request's id (the caller's `X-Request-Id` when well formed); quote it to support",
  },
};

/**
 * Names schemas for the OpenAPI document: each becomes `components.schemas[name]` and every use a
 * `$ref` to it (see hoistNamedSchemas). Returns the schemas, named.
 */
export function named<T extends Record<string, TSchema>>(schemas: T): T {
  for (const [name, schema] of Object.entries(schemas)) Object.assign(schema, { title: name });
  return schemas;
}

/** A documented error answer of a route: `response: { 409: errorResponse("…") }`. */
export function errorResponse(description: string, style: "rfi" | "default" = "default"): TSchema {
  return { ...(style === "rfi" ? RFIErrorBody : ErrorBody), description };
}

/** A documented empty answer (204). */
export function emptyResponse(description: string): TSchema {
  return { type: "null", description } as TSchema;
}

/** The OpenAPI document's groups of operations, in the order partners read them. */
const API_TAGS = (
  [
    ["cases", "Submit cases and read their status, decision and history."],
    ["paused nodes", "Act on a workflow node that waits: its actions and callbacks."],
    ["tags", "Label cases from the tenant's tag vocabulary."],
    ["information requests", "Ask the customer for information and documents; record the answer."],
    ["customer attributes", "Facts about a customer that workflows read."],
    ["service", "Liveness, readiness and metrics of the running service."],
    ["webhooks", "The signed events the service posts to your endpoints."],
    ["operator: tenants", "Provision tenants (operator token)."],
    ["operator: API keys", "Issue and revoke a tenant's API keys (operator token)."],
    ["operator: workflows", "Versioned workflows: create, publish, dry-run (operator token)."],
    ["operator: cases", "Analyst actions on cases: override, close (operator token)."],
    ["operator: tags", "A tenant's tag vocabulary (operator token)."],
    [
      "operator: information requests",
      "Raise, remind, cancel and answer requests for a tenant (operator token).",
    ],
    ["operator: webhooks", "Webhook endpoints, secrets and the delivery log (operator token)."],
    ["operator: entities", "What the tenant knows across cases: customers, IBANs, devices (operator token)."],
    [
      "operator: lists",
      "A tenant's named lists of values, which workflows read with inList (operator token).",
    ],
    [
      "operator: backtests",
      "Run a candidate workflow version over past cases before publishing it (operator token).",
    ],
  ] as const
).map(([name, description]) => ({ name, description }));

type Schema = Record<string, unknown>;

function withStandardResponses(route: RouteOptions): void {
  const config = (route.config ?? {}) as {
    scope?: string;
    admin?: boolean;
    errorStyle?: "rfi";
    public?: boolean;
  };
  const schema = (route.schema ?? {}) as Schema;
  if (schema.hide) return;
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  const readsBody = methods.some((m) => m !== "GET" && m !== "HEAD");
  const style = config.errorStyle === "rfi" ? "rfi" : "default";
  const statuses = new Set<number>();
  if (config.scope) for (const s of [401, 403, 429]) statuses.add(s);
  if (config.admin) statuses.add(401);
  if (schema.params) statuses.add(404);
  if (schema.params || schema.querystring || readsBody) statuses.add(400);
  if (readsBody) for (const s of [413, 415]) statuses.add(s);

  const responses: Schema = { ...((schema.response as Schema | undefined) ?? {}) };
  for (const status of statuses) {
    if (!(status in responses)) {
      responses[status] = errorResponse(STANDARD_DESCRIPTIONS[status] ?? "Error", style);
    }
  }
  for (const [status, response] of Object.entries(responses)) {
    const r = response as Schema;
    const headers: Schema = { ...REQUEST_ID_HEADER, ...((r.headers as Schema | undefined) ?? {}) };
    if (config.scope && status !== "401" && status !== "403") {
      headers.RateLimit = {
        type: "string",
        description:
          "The key's rate limit after this request, when it has one: `limit=<burst>, remaining=<requests>, reset=<seconds until full>`",
      };
    }
    if (status === "429") {
      headers["Retry-After"] = { type: "integer", description: "Seconds until the key has tokens again" };
    }
    if (status === "503") headers["Retry-After"] = { type: "integer", description: "Seconds to wait" };
    responses[status] = { ...r, headers };
  }

  const security = config.admin
    ? [{ adminToken: [] }]
    : config.scope
      ? [{ apiKey: [config.scope] }]
      : ((schema.security as { [name: string]: string[] }[] | undefined) ?? []);
  const description = [schema.description, config.scope ? `Scope: \`${config.scope}\`.` : undefined]
    .filter(Boolean)
    .join("\n\n");
  route.schema = {
    ...schema,
    response: responses,
    security,
    ...(description ? { description } : {}),
    ...(config.scope ? { "x-scope": config.scope } : {}),
  };
}

/**
 * Replaces every schema with a `title` by a `$ref` to `components.schemas[title]`. Two different
 * schemas with one title are a mistake in the route schemas, reported at once.
 */
export function hoistNamedSchemas(doc: Schema): Schema {
  const parts = doc.components as Schema;
  parts.schemas = parts.schemas ?? {};
  const components = parts.schemas as Record<string, Schema>;
  const comparable = (s: Schema) => {
    const { description: _d, examples: _e, ...rest } = s;
    return JSON.stringify(rest);
  };
  const walk = (node: unknown, top = false): unknown => {
    if (Array.isArray(node)) return node.map((n) => walk(n));
    if (!node || typeof node !== "object") return node;
    const out: Schema = {};
    for (const [k, v] of Object.entries(node)) {
      out[k] = k === "examples" || k === "example" ? v : walk(v);
    }
    const title = out.title;
    if (top || typeof title !== "string" || !/^[A-Z][A-Za-z0-9]*$/.test(title)) return out;
    const known = components[title];
    if (!known) components[title] = out;
    else if (comparable(known) !== comparable(out)) {
      throw new Error(
        `two different schemas are both titled ${title}: ${comparable(known)} / ${comparable(out)}`,
      );
    }
    const { description } = out;
    return typeof description === "string" && description !== known?.description
      ? { $ref: `#/components/schemas/${title}`, description }
      : { $ref: `#/components/schemas/${title}` };
  };
  const hoisted: Schema = { ...doc, paths: walk(doc.paths), webhooks: walk(doc.webhooks) };
  for (const [name, schema] of Object.entries(components)) components[name] = walk(schema, true) as Schema;
  // Real answers of the service (captured from a run of it), shown with the schemas they fill.
  for (const [name, example] of Object.entries(EXAMPLES as Record<string, unknown>)) {
    const component = components[name];
    if (component) component.examples = [example];
  }
  return hoisted;
}

export interface OpenApiOptions {
  webhooks: Schema;
  schemas?: Record<string, TSchema>;
}

/** The document (`/openapi.json`), its every-operation parts, and the offline `/docs` page. */
export async function installOpenApi(
  app: FastifyInstance,
  ctx: AppContext,
  options: OpenApiOptions,
): Promise<void> {
  app.addHook("onRoute", withStandardResponses);
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Case Decisioning Service",
        version: "1.0.0",
        description: [
          "Cases (KYC, KYB, transactions) submitted by partners run through the tenant's versioned",
          "workflow and end in a decision, delivered by signed webhooks. Partners authenticate",
          "with `X-API-Key`; operator endpoints (`/admin`) with a bearer token. Errors are",
          "`Error` (`{error, code, details?}`), or `RFIError` on the information-request",
          "endpoints; every response carries `X-Request-Id`.",
        ].join(" "),
      },
      servers: [{ url: ctx.config.publicUrl, description: "This deployment" }],
      tags: API_TAGS,
      components: {
        securitySchemes: {
          apiKey: {
            type: "apiKey",
            in: "header",
            name: "X-API-Key",
            description: "A partner API key; the operation's scope is listed with it",
          },
          adminToken: {
            type: "http",
            scheme: "bearer",
            description: "The operator token (`CDS_ADMIN_TOKEN`)",
          },
          metricsToken: { type: "http", scheme: "bearer", description: "`CDS_METRICS_TOKEN`, when set" },
        },
        schemas: { ...(options.schemas ?? {}) },
      },
      webhooks: options.webhooks as never,
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) },
    transformObject: (documentObject) =>
      hoistNamedSchemas((documentObject as { openapiObject: Schema }).openapiObject) as never,
  });
  await app.register(swaggerUi, {
    routePrefix: "/docs",
    uiConfig: { validatorUrl: null, deepLinking: true, defaultModelsExpandDepth: 1, showExtensions: true },
  });
  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
}
