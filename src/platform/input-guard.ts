import type { Socket } from "node:net";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { uuid } from "./crypto.js";
import { AppError, describeProblems } from "./errors.js";

/**
 * The edge of the service: what no part of it can store or walk safely is refused here, once, for
 * every route, before any schema, service or database sees it.
 *
 * - Text PostgreSQL cannot hold: NUL (`\u0000`) and lone UTF-16 surrogates, in any string or key
 *   of a JSON body, in a path parameter or in a query parameter. 400 naming the field.
 * - JSON nested deeper than 64 levels (a body object is level 1). 400.
 *
 * A route may leave some body strings to its own validation where the spec gives them another
 * answer (the RFI answer's field values are 422 `invalid_field_value`): `config.guardDefers`.
 */

export const MAX_JSON_DEPTH = 64;

declare module "fastify" {
  interface FastifyContextConfig {
    /** Body paths (as the guard writes them, `fields[3].value`) this route checks itself. */
    guardDefers?: RegExp;
  }
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** True when PostgreSQL could not store the text as sent (NUL, lone surrogates). */
export function isUnstorableText(text: string): boolean {
  return text.includes("\u0000") || LONE_SURROGATE.test(text);
}

function describeText(text: string): string {
  return text.includes("\u0000") ? "contains a NUL character (\\u0000)" : "contains a lone UTF-16 surrogate";
}

function child(path: string, key: string | number): string {
  if (typeof key === "number") return `${path}[${key}]`;
  const safe = /^[A-Za-z_$][A-Za-z0-9_$-]*$/.test(key) ? key : JSON.stringify(key);
  if (path === "") return safe.startsWith('"') ? `[${safe}]` : safe;
  return safe.startsWith('"') ? `${path}[${safe}]` : `${path}.${safe}`;
}

interface Problem {
  path: string;
  message: string;
}

interface Visit {
  value: unknown;
  depth: number;
  key: string | number | undefined;
  parent: Visit | undefined;
}

/** A visited value's path, built only when there is a problem to name. */
function pathOf(visit: Visit): string {
  const keys: (string | number)[] = [];
  for (let v: Visit | undefined = visit; v?.key !== undefined; v = v.parent) keys.push(v.key);
  return keys.reverse().reduce<string>((path, key) => child(path, key), "");
}

/**
 * The first problem of a parsed JSON value, walking depth-first; iterative so that no nesting
 * can overflow the stack, and stopping at the first level past the limit.
 */
export function findJsonProblem(root: unknown, defers?: RegExp): Problem | undefined {
  const stack: Visit[] = [{ value: root, depth: 1, key: undefined, parent: undefined }];
  while (stack.length > 0) {
    const visit = stack.pop() as Visit;
    const { value, depth } = visit;
    if (typeof value === "string") {
      if (isUnstorableText(value)) {
        const path = pathOf(visit);
        if (!defers?.test(path)) return { path, message: describeText(value) };
      }
      continue;
    }
    if (typeof value !== "object" || value === null) continue;
    // Only what JSON.parse makes: a raw body (a stream, a Buffer) is the route's own.
    const proto = Object.getPrototypeOf(value);
    if (!Array.isArray(value) && proto !== Object.prototype && proto !== null) continue;
    if (depth > MAX_JSON_DEPTH) {
      return { path: pathOf(visit), message: `is nested deeper than ${MAX_JSON_DEPTH} levels` };
    }
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) {
        stack.push({ value: value[i], depth: depth + 1, key: i, parent: visit });
      }
      continue;
    }
    const keys = Object.keys(value);
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i] as string;
      const next: Visit = {
        value: (value as Record<string, unknown>)[key],
        depth: depth + 1,
        key,
        parent: visit,
      };
      if (isUnstorableText(key))
        return { path: pathOf(next), message: `has a key that ${describeText(key)}` };
      stack.push(next);
    }
  }
  return undefined;
}

function checkStrings(values: unknown): Problem | undefined {
  if (typeof values !== "object" || values === null) return undefined;
  for (const [name, value] of Object.entries(values)) {
    const list = Array.isArray(value) ? value : [value];
    for (const v of list) {
      if (typeof v === "string" && isUnstorableText(v))
        return { path: child("", name), message: describeText(v) };
    }
  }
  return undefined;
}

async function guard(request: FastifyRequest): Promise<void> {
  const problem =
    checkStrings(request.params) ??
    checkStrings(request.query) ??
    findJsonProblem(request.body, request.routeOptions.config?.guardDefers);
  if (problem) {
    throw new AppError("invalid_request", describeProblems("invalid request", [problem]), {
      details: [problem],
    });
  }
}

export function installInputGuard(app: FastifyInstance): void {
  app.addHook("preValidation", guard);
}

/**
 * Errors the router finds before any route or hook runs (`%zz` in a path): answered in the
 * service's error shape, with the request id the hooks would have set.
 */
export function routerErrors(error: Error, request: FastifyRequest, reply: FastifyReply): void {
  const bad = (error as { code?: string }).code === "FST_ERR_BAD_URL";
  reply
    .header("x-request-id", request.id)
    .status(400)
    .send({
      error: bad
        ? "the request path is not a valid URL (malformed percent-encoding)"
        : "the request cannot be routed",
      code: "invalid_request",
    });
}

const CLIENT_ERRORS: Record<string, { status: number; reason: string; code: string; message: string }> = {
  HPE_HEADER_OVERFLOW: {
    status: 431,
    reason: "Request Header Fields Too Large",
    code: "headers_too_large",
    message: "the request headers are larger than the server accepts",
  },
  ERR_HTTP_REQUEST_TIMEOUT: {
    status: 408,
    reason: "Request Timeout",
    code: "request_timeout",
    message: "the request was not received in time",
  },
};

/**
 * Requests Node's HTTP parser refuses before Fastify sees them (oversized headers, malformed
 * HTTP): answered in the service's error shape with an `X-Request-Id`, then the connection closes.
 */
export function clientErrors(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === "ECONNRESET" || socket.destroyed) return;
  const known = CLIENT_ERRORS[error.code ?? ""] ?? {
    status: 400,
    reason: "Bad Request",
    code: "invalid_request",
    message: "the request is not valid HTTP",
  };
  const body = JSON.stringify({ error: known.message, code: known.code });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${known.status} ${known.reason}\r\n` +
        "Content-Type: application/json; charset=utf-8\r\n" +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${uuid()}\r\n` +
        "Connection: close\r\n\r\n" +
        body,
    );
  }
  socket.destroy(error);
}
