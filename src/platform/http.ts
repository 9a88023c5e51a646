import { Ajv, type Options as AjvOptions } from "ajv";
import * as ajvFormats from "ajv-formats";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifySchema } from "fastify";
import { AppError, type ErrorDetail } from "./errors.js";

// ajv-formats is CommonJS; under NodeNext its function is the namespace's `default`.
export const addFormats = ajvFormats.default as unknown as (ajv: Ajv) => Ajv;

declare module "fastify" {
  interface FastifyContextConfig {
    /**
     * `rfi`: errors answer with the spec's RFIError body (`error` is a machine-readable code).
     * Default: `{error}` with a human-readable message.
     */
    errorStyle?: "rfi";
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

function rfiCodeFor(status: number): string {
  switch (status) {
    case 400:
      return "invalid_request";
    case 401:
      return "unauthorized";
    case 403:
      return "forbidden";
    case 404:
      return "not_found";
    case 413:
      return "payload_too_large";
    case 415:
      return "unsupported_media_type";
    case 429:
      return "rate_limited";
    default:
      return status >= 500 ? "internal" : "bad_request";
  }
}

function sendError(
  request: FastifyRequest,
  reply: FastifyReply,
  status: number,
  code: string,
  message: string,
  options: {
    extra?: Record<string, unknown>;
    details?: ErrorDetail[];
    headers?: Record<string, string>;
  } = {},
): FastifyReply {
  if (options.headers) reply.headers(options.headers);
  const rfi = request.routeOptions.config?.errorStyle === "rfi";
  const body = rfi
    ? { error: code, ...options.extra, ...(message ? { message } : {}) }
    : { error: message, ...options.extra };
  if (options.details) Object.assign(body, { details: options.details });
  return reply.status(status).send(body);
}

function validationDetails(error: FastifyError): ErrorDetail[] {
  const where = error.validationContext ?? "body";
  const all = (error.validation ?? []).map((v) => {
    const params = v.params as {
      missingProperty?: string;
      additionalProperty?: string;
      allowedValues?: unknown[];
      type?: string;
    };
    const prop = params.missingProperty ?? params.additionalProperty;
    const pointer = `${v.instancePath}${prop ? `/${prop}` : ""}`;
    let message = v.message ?? "is invalid";
    if (params.additionalProperty) message = "is not a known property";
    else if (v.keyword === "required") message = "is required";
    else if (v.keyword === "enum" && params.allowedValues) {
      message = `must be one of: ${params.allowedValues.join(", ")}`;
    }
    return {
      path: `${where}${pointer.replaceAll("/", ".")}`,
      message,
      // A union (`T | null`) reports each branch's failure and then its own; a specific error
      // about the same field says more than "must be null" or "must match a schema in anyOf".
      umbrella: v.keyword === "anyOf" || (v.keyword === "type" && params.type === "null"),
    };
  });
  const specific = all.filter((d) => !d.umbrella);
  return all
    .filter((d) => !d.umbrella || !specific.some((s) => s.path === d.path || s.path.startsWith(`${d.path}.`)))
    .map(({ path, message }) => ({ path, message }));
}

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

  app.setErrorHandler((error: FastifyError | AppError, request, reply) => {
    if (error instanceof AppError) {
      if (error.status >= 500) request.log.error({ err: error }, "request failed");
      return sendError(request, reply, error.status, error.code, error.message, {
        extra: error.extra,
        details: error.details,
        headers: error.headers,
      });
    }
    if (error.validation) {
      const details = validationDetails(error);
      const message = `invalid request: ${details.map((d) => `${d.path} ${d.message}`).join("; ")}`;
      return sendError(request, reply, 400, "invalid_request", message, { details });
    }
    const status = error.statusCode ?? 500;
    if (status >= 500) {
      request.log.error({ err: error }, "request failed");
      return sendError(request, reply, 500, "internal", "internal error");
    }
    let message = error.message;
    if (error.code === "FST_ERR_CTP_BODY_TOO_LARGE") message = "request body is larger than 1 MiB";
    if (error.code === "FST_ERR_CTP_INVALID_JSON_BODY" || error instanceof SyntaxError) {
      message = "request body is not valid JSON";
    }
    if (error.code === "FST_ERR_CTP_EMPTY_JSON_BODY") message = "request body is empty; send a JSON object";
    return sendError(request, reply, status, rfiCodeFor(status), message);
  });
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
