import { Ajv, type Options as AjvOptions } from "ajv";
import * as ajvFormats from "ajv-formats";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifySchema } from "fastify";
import { AppError, codeForStatus, describeProblems, type ErrorCode, type ErrorDetail } from "./errors.js";

// ajv-formats is CommonJS; under NodeNext its function is the namespace's `default`.
export const addFormats = ajvFormats.default as unknown as (ajv: Ajv) => Ajv;

declare module "fastify" {
  interface FastifyContextConfig {
    /**
     * `rfi`: errors answer with the spec's RFIError body (`error` is a machine-readable code).
     * Default: `{error}` with a human-readable message.
     */
    errorStyle?: "rfi";
    /**
     * The route's body rules beyond its schema, run on a body the schema refused so that one
     * answer lists every problem; the handler still runs them on a body the schema accepts.
     */
    bodyProblems?: (request: FastifyRequest) => Promise<ErrorDetail[]>;
  }
}

/**
 * Request bodies are validated strictly (no type coercion, nothing removed); path and query
 * parameters arrive as strings, so they are coerced to the declared types.
 */
export function installValidators(app: FastifyInstance): void {
  const base: AjvOptions = { allErrors: true, strict: false, useDefaults: true, removeAdditional: false };
  const bodyAjv = new Ajv({ ...base, coerceTypes: false });
  const paramAjv = new Ajv({ ...base, coerceTypes: "array" });
  addFormats(bodyAjv);
  addFormats(paramAjv);
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === "body" ? bodyAjv : paramAjv).compile(schema as FastifySchema),
  );
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Honour a caller's well-formed `X-Request-Id`, else make one. */
export function requestIdFrom(header: string | string[] | undefined, generate: () => string): string {
  return typeof header === "string" && REQUEST_ID.test(header) ? header : generate();
}

function sendError(
  request: FastifyRequest,
  reply: FastifyReply,
  status: number,
  code: ErrorCode,
  message: string,
  options: {
    extra?: Record<string, unknown> | undefined;
    details?: ErrorDetail[] | undefined;
    headers?: Record<string, string> | undefined;
  } = {},
): FastifyReply {
  if (options.headers) reply.headers(options.headers);
  const details = options.details && options.details.length > 0 ? { details: options.details } : {};
  const body =
    request.routeOptions.config?.errorStyle === "rfi"
      ? { error: code, ...options.extra, ...(message ? { message } : {}), ...details }
      : { error: message, code, ...details };
  return reply.status(status).send(body);
}

/** `/subject/parties/0/role` (a JSON pointer) as a caller writes it: `subject.parties[0].role`. */
export function fieldPath(pointer: string): string {
  let path = "";
  for (const raw of pointer.split("/").slice(1)) {
    const segment = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    path += /^\d+$/.test(segment) ? `[${segment}]` : path ? `.${segment}` : segment;
  }
  return path;
}

function joinPath(parent: string, child: string): string {
  return parent ? `${parent}.${child}` : child;
}

function validationDetails(error: FastifyError): ErrorDetail[] {
  const all = (error.validation ?? []).map((v) => {
    const params = v.params as {
      missingProperty?: string;
      additionalProperty?: string;
      allowedValues?: unknown[];
      type?: string;
    };
    const prop = params.missingProperty ?? params.additionalProperty;
    const at = fieldPath(v.instancePath);
    let message = v.message ?? "is invalid";
    if (params.additionalProperty) message = "is not a known property";
    else if (v.keyword === "required") message = "is required";
    else if (v.keyword === "enum" && params.allowedValues) {
      message = `must be one of: ${params.allowedValues.join(", ")}`;
    }
    return {
      path: prop ? joinPath(at, prop) : at,
      message,
      // A union (`T | null`) reports each branch's failure and then its own; a specific error
      // about the same field says more than "must be null" or "must match a schema in anyOf".
      umbrella: v.keyword === "anyOf" || (v.keyword === "type" && params.type === "null"),
    };
  });
  const specific = all.filter((d) => !d.umbrella);
  return all
    .filter((d) => !d.umbrella || !specific.some((s) => overlaps(s.path, d.path)))
    .map(({ path, message }) => ({ path, message }));
}

/** Whether one path is the other or lies inside it. */
function overlaps(a: string, b: string): boolean {
  const inside = (outer: string, inner: string) =>
    outer === "" || inner === outer || inner.startsWith(`${outer}.`) || inner.startsWith(`${outer}[`);
  return inside(a, b) || inside(b, a);
}

/**
 * The rules a body schema cannot state (a route's `config.bodyProblems`) are checked too when the
 * schema already failed, so that one answer lists every problem of the body. A rule about a field
 * the schema already faulted adds nothing, and a rule that cannot run on the malformed body is
 * left out rather than failing the request.
 */
async function withBodyRules(request: FastifyRequest, schemaProblems: ErrorDetail[]): Promise<ErrorDetail[]> {
  const rules = request.routeOptions.config?.bodyProblems;
  if (!rules) return schemaProblems;
  let more: ErrorDetail[] = [];
  try {
    more = await rules(request);
  } catch (err) {
    request.log.debug({ err }, "body rules skipped on a body the schema refused");
  }
  return [...schemaProblems, ...more.filter((m) => !schemaProblems.some((s) => overlaps(s.path, m.path)))];
}

const FRAMEWORK_MESSAGES: Record<string, string> = {
  FST_ERR_CTP_BODY_TOO_LARGE: "request body is larger than 1 MiB",
  FST_ERR_CTP_INVALID_JSON_BODY: "request body is not valid JSON",
  FST_ERR_CTP_EMPTY_JSON_BODY: "request body is empty; send a JSON object",
  FST_ERR_CTP_INVALID_MEDIA_TYPE: "unsupported Content-Type: send application/json",
};

export function installErrorHandling(app: FastifyInstance): void {
  app.setNotFoundHandler((request, reply) =>
    sendError(
      request,
      reply,
      404,
      "not_found",
      `route ${request.method} ${request.url.split("?")[0]} not found`,
    ),
  );

  app.setErrorHandler(async (error: FastifyError | AppError, request, reply) => {
    if (error instanceof AppError) {
      // A 500 is a bug of ours; a 502 or 503 is a state of the world (a vendor down, no worker yet).
      if (error.status === 500) request.log.error({ err: error }, "request failed");
      else if (error.status > 500) request.log.warn({ err: error }, "request could not be served");
      return sendError(request, reply, error.status, error.code, error.message, {
        extra: error.extra,
        details: error.details,
        headers: error.headers,
      });
    }
    if (error.validation) {
      let details = validationDetails(error);
      if (error.validationContext === "body") details = await withBodyRules(request, details);
      const where = error.validationContext === "body" || !error.validationContext ? "request" : "query";
      return sendError(
        request,
        reply,
        400,
        "invalid_request",
        describeProblems(`invalid ${where}`, details),
        {
          details,
        },
      );
    }
    const status = error.statusCode ?? 500;
    if (status >= 500) {
      request.log.error({ err: error }, "request failed");
      return sendError(request, reply, 500, "internal", "internal error");
    }
    const message =
      FRAMEWORK_MESSAGES[error.code] ??
      (error instanceof SyntaxError ? "request body is not valid JSON" : error.message);
    return sendError(request, reply, status, codeForStatus(status), message);
  });
}

/**
 * Unknown body properties get one answer on every endpoint: 400 naming each. Every object of a
 * body schema that does not say otherwise is closed (free-form objects such as `payload` and
 * `metadata` say `additionalProperties: true`). The rewritten schema is also what the OpenAPI
 * document shows. `tenantId` at the top of any body is dropped before validation: the tenant is
 * the key's, never the body's.
 */
export function installBodyRules(app: FastifyInstance): void {
  app.addHook("onRoute", (route) => {
    if (route.schema?.body) route.schema = { ...route.schema, body: closed(route.schema.body) };
  });
  app.addHook("preValidation", async (request) => {
    const body = request.body;
    if (body && typeof body === "object" && !Array.isArray(body) && "tenantId" in body) {
      delete (body as Record<string, unknown>).tenantId;
    }
  });
}

const SUBSCHEMA_LISTS = ["anyOf", "oneOf", "allOf", "prefixItems"] as const;
const SUBSCHEMAS = ["items", "not", "if", "then", "else", "additionalProperties"] as const;

function closed(schema: unknown): unknown {
  if (!schema || typeof schema !== "object" || Array.isArray(schema)) return schema;
  const s = { ...(schema as Record<string, unknown>) };
  if (s.properties && typeof s.properties === "object") {
    s.properties = Object.fromEntries(Object.entries(s.properties).map(([k, v]) => [k, closed(v)]));
    if (s.additionalProperties === undefined && s.patternProperties === undefined)
      s.additionalProperties = false;
  }
  for (const key of SUBSCHEMAS) if (key in s) s[key] = closed(s[key]);
  for (const key of SUBSCHEMA_LISTS) if (Array.isArray(s[key])) s[key] = (s[key] as unknown[]).map(closed);
  return s;
}

/**
 * JSON bodies are parsed by Fastify's own parser (prototype-poisoning safe), except that an
 * empty body with a JSON content type reads as no body: clients often send the header on a
 * POST without parameters (publish, remind, an action without params), and such a request is
 * valid. Routes that need a body still answer 400 from their schema.
 */
export function installJsonParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    const text = typeof body === "string" ? body : body.toString("utf8");
    if (text.trim() === "") {
      done(null, undefined);
      return;
    }
    void parse(request, text, done);
  });
}
