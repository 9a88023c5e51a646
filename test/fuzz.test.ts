import fs from "node:fs";
import { Writable } from "node:stream";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../src/app.js";
import { createAppContext } from "../src/context.js";
import type { App } from "../src/platform/app-types.js";
import type { AppContext } from "../src/platform/context.js";
import { ERROR_CODES } from "../src/platform/errors.js";
import { createLogger } from "../src/platform/logger.js";
import { testConfig } from "./support/app.js";
import { createTestDatabase, type TestDatabase } from "./support/db.js";
import { adminHeaders, createPartner, createStoredCase, type Partner } from "./support/fixtures.js";
import { fuzzRun } from "./support/fuzz.js";
import { raiseRfi } from "./support/rfi.js";
import { amountScreen, createWorkflow } from "./support/workflows.js";

/**
 * Generated requests against every operation of the OpenAPI document: random shapes built from
 * each operation's own schema, wrong types, huge and unicode-hostile strings, deep nesting,
 * hostile path ids and query values. Whatever comes in, the answer is never a 5xx, an error is a
 * JSON body with a message, every answer carries X-Request-Id, and nothing reaches the error log.
 *
 * `npm test` runs it with a fixed seed and about 2,000 requests; `npm run fuzz` runs 20,000 with a
 * fresh seed, printed (CDS_FUZZ_SEED and CDS_FUZZ_REQUESTS set them).
 */

const {
  seed: SEED,
  requests: REQUESTS,
  timeoutMs: TIMEOUT_MS,
} = fuzzRun("fuzz", {
  seed: 20261123,
  requests: 2_000,
});

const errorLines: string[] = [];
let app: App;
let ctx: AppContext;
let database: TestDatabase;
let partner: Partner;
const ids: Record<string, string> = {};

beforeAll(async () => {
  database = await createTestDatabase();
  const config = testConfig({ logLevel: "error" });
  const sink = new Writable({
    write(chunk, _encoding, callback) {
      errorLines.push(String(chunk));
      callback();
    },
  });
  ctx = createAppContext({ config, db: database.db, log: createLogger("error", sink) });
  app = await buildApp(ctx);
  await app.ready();
  partner = await createPartner(app);
  await createWorkflow(app, partner.tenantId, "screen", amountScreen);
  const caseId = await createStoredCase(ctx, partner.tenantId, "in_review");
  const { rfiId } = await raiseRfi(app, partner, caseId);
  Object.assign(ids, {
    tenantId: partner.tenantId,
    caseId,
    rfiId,
    workflowId: "screen",
    version: "1",
    webhookKey: "default",
    tag: "vip",
  });
});

afterAll(async () => {
  await app?.close();
  await database?.drop();
  if (ctx) fs.rmSync(ctx.config.dataDir, { recursive: true, force: true });
});

// --- Values ---------------------------------------------------------------------------------

const HOSTILE_STRINGS = [
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "x\udfffy",
  "\ud83d\ude00",
  "\u202e\u0301",
  "%zz",
  "%00",
  "../../etc/passwd",
  "' OR 1=1 --",
  "<script>alert(1)</script>",
  "null",
  "NaN",
  "-1",
  "1e309",
  "9".repeat(400),
  "x".repeat(70_000),
  "00000000-0000-0000-0000-000000000000",
  "__proto__",
  "constructor",
  "2026-02-30T25:61:00Z",
];

const hostileString = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 300 }) },
);

const hostileNumber = fc.constantFrom(
  0,
  -1,
  -0,
  1.5,
  2 ** 53 + 1,
  1e308,
  -1e308,
  2_147_483_648,
  Number.MAX_SAFE_INTEGER,
);

/** A deeply nested JSON text, written out (JSON.stringify would recurse as deep). */
const deepText = fc
  .tuple(fc.integer({ min: 60, max: 6000 }), fc.boolean())
  .map(([depth, arrays]) =>
    arrays ? `${"[".repeat(depth)}1${"]".repeat(depth)}` : `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`,
  );

const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: hostileString },
  { weight: 1, arbitrary: hostileNumber },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false, [], {}) },
);

interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  enum?: unknown[];
  const?: unknown;
  anyOf?: Schema[];
  oneOf?: Schema[];
  format?: string;
  additionalProperties?: boolean | Schema;
}

/** Values shaped by a schema most of the time, and hostile the rest. */
function fromSchema(schema: Schema | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 5) return hostileValue;
  const shaped: fc.Arbitrary<unknown>[] = [];
  if (schema.enum) shaped.push(fc.constantFrom(...schema.enum));
  if (schema.const !== undefined) shaped.push(fc.constant(schema.const));
  for (const branch of [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])])
    shaped.push(fromSchema(branch, depth + 1));
  const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  for (const type of types) {
    switch (type) {
      case "object": {
        const props = Object.fromEntries(
          Object.entries(schema.properties ?? {}).map(([k, v]) => [k, fromSchema(v, depth + 1)]),
        );
        shaped.push(fc.record(props, { requiredKeys: [] }));
        if (schema.additionalProperties !== false) {
          shaped.push(fc.dictionary(hostileString, hostileValue, { maxKeys: 4 }));
        }
        break;
      }
      case "array":
        shaped.push(fc.array(fromSchema(schema.items, depth + 1), { maxLength: 4 }));
        break;
      case "string":
        if (schema.format === "date-time") {
          shaped.push(fc.date({ noInvalidDate: true }).map((d) => d.toISOString()));
        } else if (schema.format === "uuid") {
          shaped.push(fc.uuid());
        } else {
          shaped.push(fc.string({ maxLength: 30 }));
        }
        break;
      case "integer":
        shaped.push(fc.integer({ min: -5, max: 200 }));
        break;
      case "number":
        shaped.push(fc.double({ noNaN: true, noDefaultInfinity: true }));
        break;
      case "boolean":
        shaped.push(fc.boolean());
        break;
      case "null":
        shaped.push(fc.constant(null));
        break;
    }
  }
  if (shaped.length === 0) return hostileValue;
  return fc.oneof({ weight: 5, arbitrary: fc.oneof(...shaped) }, { weight: 1, arbitrary: hostileValue });
}

/** Percent-encodes what a client can send; a lone surrogate goes as its (invalid) UTF-8 bytes. */
function encodeSegment(value: string): string {
  return [...value]
    .map((ch) => {
      try {
        return encodeURIComponent(ch);
      } catch {
        return "%ED%A0%80";
      }
    })
    .join("");
}

// --- Operations -----------------------------------------------------------------------------

interface Operation {
  method: string;
  path: string;
  auth: "apiKey" | "admin" | "none";
  params: string[];
  query: Record<string, Schema>;
  body: Schema | undefined;
}

interface OpenApiOperation {
  security?: Record<string, unknown>[];
  parameters?: { in: string; name: string; schema?: Schema }[];
  requestBody?: { content?: Record<string, { schema?: Schema }> };
}

function operations(): Operation[] {
  const doc = app.swagger() as { paths: Record<string, Record<string, OpenApiOperation>> };
  const found: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const security = op.security?.[0] ?? {};
      const parameters = op.parameters ?? [];
      found.push({
        method: method.toUpperCase(),
        path,
        auth: "adminToken" in security ? "admin" : "apiKey" in security ? "apiKey" : "none",
        params: parameters.filter((p) => p.in === "path").map((p) => p.name),
        query: Object.fromEntries(
          parameters.filter((p) => p.in === "query").map((p) => [p.name, p.schema ?? {}]),
        ),
        body: op.requestBody?.content?.["application/json"]?.schema,
      });
    }
  }
  return found;
}

/** A path id: the fixture's real one (so that services are reached), a stranger's, or hostile. */
function pathValue(name: string): fc.Arbitrary<string> {
  const real = ids[name];
  const options: fc.Arbitrary<string>[] = [fc.uuid(), hostileString.map(encodeSegment)];
  options.push(fc.constantFrom("%zz", "%00", "%", "a%2Fb", "%ED%A0%80"));
  // A real key id would let the fuzzer delete its own key; key ids are never taken from the fixture.
  if (real && name !== "keyId") return fc.oneof({ weight: 4, arbitrary: fc.constant(real) }, ...options);
  return fc.oneof(...options);
}

type Body = { kind: "none" } | { kind: "json"; value: unknown } | { kind: "raw"; text: string; type: string };

function bodyOf(op: Operation): fc.Arbitrary<Body> {
  if (op.method === "GET" || op.method === "DELETE") {
    return fc.oneof(
      { weight: 5, arbitrary: fc.constant<Body>({ kind: "none" }) },
      fc.constant<Body>({ kind: "json", value: {} }),
    );
  }
  return fc.oneof(
    {
      weight: 8,
      arbitrary: fromSchema(op.body ?? { type: "object" }).map((value): Body => ({ kind: "json", value })),
    },
    { weight: 1, arbitrary: deepText.map((text): Body => ({ kind: "raw", text, type: "application/json" })) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(
          fc.constantFrom(
            "application/json",
            "text/plain",
            "application/x-www-form-urlencoded",
            "application/json; charset=latin1",
          ),
          fc.oneof(
            fc.constantFrom("{", '{"a":', "[1,", "nul", '"\\ud800"', '{"a":"\\u0000"}'),
            fc.string({ maxLength: 50 }),
          ),
        )
        .map(([type, text]): Body => ({ kind: "raw", text, type })),
    },
    { weight: 1, arbitrary: fc.constant<Body>({ kind: "none" }) },
  );
}

function requestOf(op: Operation) {
  const params = Object.fromEntries(op.params.map((p) => [p, pathValue(p)]));
  const query = Object.fromEntries(
    Object.entries(op.query).map(([k, schema]) => [
      k,
      fc.oneof(fromSchema(schema).map(String), hostileString).map(encodeSegment),
    ]),
  );
  return fc.record({
    params: fc.record(params),
    query: fc.record(query, { requiredKeys: [] }),
    body: bodyOf(op),
  });
}

function urlOf(op: Operation, params: Record<string, string>, query: Record<string, string>): string {
  const path = op.path.replace(/\{([^}]+)\}/g, (_m, name: string) => params[name] ?? "x");
  const qs = Object.entries(query)
    .map(([k, v]) => `${k}=${v}`)
    .join("&");
  return qs ? `${path}?${qs}` : path;
}

function headersOf(op: Operation): Record<string, string> {
  if (op.auth === "admin") return { ...adminHeaders };
  if (op.auth === "apiKey") return { ...partner.headers };
  return {};
}

describe("fuzzing every operation of the OpenAPI document", () => {
  it(
    "never answers 5xx; errors are JSON with a catalogued code; X-Request-Id every time; no error logged",
    async () => {
      const ops = operations();
      expect(ops.length).toBeGreaterThan(30);
      const perOperation = Math.max(1, Math.ceil(REQUESTS / ops.length));
      let sent = 0;
      for (const [index, op] of ops.entries()) {
        await fc.assert(
          fc.asyncProperty(requestOf(op), async ({ params, query, body }) => {
            const q = query as Record<string, string>;
            const url = urlOf(op, params, q);
            const headers = headersOf(op);
            let payload: string | undefined;
            if (body.kind === "json") {
              payload = JSON.stringify(body.value);
              headers["content-type"] = "application/json";
            } else if (body.kind === "raw") {
              payload = body.text;
              headers["content-type"] = body.type;
            }
            const res = await app.inject({ method: op.method as "GET", url, headers, payload });
            sent += 1;
            const where = `${op.method} ${url.slice(0, 200)} ${String(payload).slice(0, 200)}`;
            // Readiness answers 503 by design while no worker runs (this app starts none).
            const probe = op.path === "/ready" && res.statusCode === 503;
            if (!probe) expect(res.statusCode, `${where} → ${res.body.slice(0, 300)}`).toBeLessThan(500);
            expect(res.headers["x-request-id"], where).toBeTruthy();
            if (res.statusCode >= 400) {
              expect(res.headers["content-type"], where).toMatch(/^application\/json/);
              const body = JSON.parse(res.body);
              expect(typeof body.error, where).toBe("string");
              // The RFIError of the information-request routes carries its code as `error`.
              const code = typeof body.code === "string" ? body.code : body.error;
              expect(ERROR_CODES, `${where} → ${res.body.slice(0, 300)}`).toContain(code);
            }
          }),
          { seed: SEED + index, numRuns: perOperation, endOnFailure: true },
        );
      }
      expect(sent).toBeGreaterThanOrEqual(REQUESTS);
      expect(errorLines, errorLines.join("\n").slice(0, 2000)).toEqual([]);
    },
    TIMEOUT_MS,
  );
});
