import { Ajv, type ValidateFunction } from "ajv";
import type { FastifyInstance } from "fastify";
import { afterAll } from "vitest";
import { addFormats } from "../../src/platform/http.js";

/**
 * Every response the test suite produces is checked against the OpenAPI document of the app that
 * produced it: its status must be documented for the operation, and a JSON body must match the
 * schema documented for that status. A mismatch is recorded and fails the test file (see the
 * afterAll below), so the document cannot drift from what the service answers.
 *
 * The one exception is explicit: routes hidden from the document (`schema.hide`, such as the
 * document itself, the /docs pages, HTML pages and the signed upload URL, which partners use as
 * an opaque URL) are not operations of the API. A request no route matched must answer the
 * documented `Error` shape, except under /console, whose own not-found page is HTML for people.
 */
const mismatches: string[] = [];

/** While above zero, a test is provoking 500s on purpose (a failure injected into the database). */
let injecting = 0;

/**
 * Runs `fn` while a test injects a failure: a 500 answered meanwhile is what the test asserts, not
 * a drift of the document.
 */
export async function withInjectedFailure<T>(fn: () => Promise<T>): Promise<T> {
  injecting += 1;
  try {
    return await fn();
  } finally {
    injecting -= 1;
  }
}

afterAll(() => {
  if (mismatches.length === 0) return;
  const list = [...new Set(mismatches)];
  mismatches.length = 0;
  throw new Error(`responses that do not match the OpenAPI document:\n${list.join("\n")}`);
});

type Doc = {
  paths: Record<string, Record<string, { responses?: Record<string, ResponseObject> }>>;
  components?: { schemas?: Record<string, unknown> };
};
type ResponseObject = { content?: Record<string, { schema?: unknown }>; $ref?: string };

export function checkResponsesAgainstDocument(app: FastifyInstance): void {
  let doc: Doc | undefined;
  const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv);
  const compiled = new Map<string, ValidateFunction>();

  function validator(key: string, schema: unknown): ValidateFunction {
    let fn = compiled.get(key);
    if (!fn) {
      const components = doc?.components ?? {};
      fn = ajv.compile({ $id: `doc:${compiled.size}`, ...(schema as object), components });
      compiled.set(key, fn);
    }
    return fn;
  }

  app.addHook("onSend", async (request, reply, payload) => {
    if (request.method === "HEAD" || request.method === "OPTIONS") return payload;
    const route = request.routeOptions;
    if (route.schema?.hide) return payload;
    if (injecting > 0 && reply.statusCode === 500) return payload;
    if (route.url === undefined && request.url.startsWith("/console")) return payload;
    doc ??= (app as unknown as { swagger(): Doc }).swagger();
    const status = String(reply.statusCode);
    const label = `${request.method} ${route.url ?? request.url.split("?")[0]} ${status}`;
    let schema: unknown;
    let key: string;
    if (route.url === undefined) {
      schema = { $ref: "#/components/schemas/Error" };
      key = "unrouted";
    } else {
      const path = route.url.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
      const operation = doc.paths[path]?.[request.method.toLowerCase()];
      if (!operation) {
        mismatches.push(`${label}: the operation is not in the document`);
        return payload;
      }
      const response = operation.responses?.[status] ?? operation.responses?.[`${status[0]}XX`];
      if (!response) {
        mismatches.push(`${label}: status not documented`);
        return payload;
      }
      schema = response.content?.["application/json"]?.schema;
      key = `${request.method} ${path} ${status}`;
      if (schema === undefined) {
        if (payload !== undefined && payload !== null && payload !== "" && isJson(reply))
          mismatches.push(`${label}: a body where the document has none`);
        return payload;
      }
    }
    if (!isJson(reply)) {
      mismatches.push(`${label}: not JSON (${String(reply.getHeader("content-type"))})`);
      return payload;
    }
    let body: unknown;
    try {
      body = JSON.parse(typeof payload === "string" ? payload : String(payload));
    } catch {
      mismatches.push(`${label}: the body is not JSON`);
      return payload;
    }
    const validate = validator(key, schema);
    if (!validate(body)) {
      const problems = (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message}`).join("; ");
      mismatches.push(`${label}: ${problems} in ${JSON.stringify(body).slice(0, 300)}`);
    }
    return payload;
  });
}

function isJson(reply: { getHeader(name: string): unknown }): boolean {
  return /^application\/json/.test(String(reply.getHeader("content-type") ?? ""));
}
