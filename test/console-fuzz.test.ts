import fs from "node:fs";
import { Writable } from "node:stream";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../src/app.js";
import { createAppContext } from "../src/context.js";
import type { App } from "../src/platform/app-types.js";
import type { AppContext } from "../src/platform/context.js";
import { createLogger } from "../src/platform/logger.js";
import { testConfig } from "./support/app.js";
import { type ConsoleClient, createConsoleUser, signIn } from "./support/console.js";
import { createTestDatabase, type TestDatabase } from "./support/db.js";
import { createPartner, createStoredCase, type Partner } from "./support/fixtures.js";
import { fuzzRun } from "./support/fuzz.js";
import { raiseRfi } from "./support/rfi.js";

/**
 * Generated requests against every console route, found in the app's own route table (so a new
 * page is fuzzed the day it is added): form posts with known and unknown field names and hostile
 * values, JSON documents and raw text of every content type, hostile path ids, with and without a
 * session and a CSRF token. Whatever comes in, the answer is never a 5xx and nothing reaches the
 * error log.
 *
 * `npm test` runs it with a fixed seed and about 1,500 requests; `npm run fuzz` runs 20,000 with a
 * fresh seed, printed (CDS_FUZZ_SEED and CDS_FUZZ_REQUESTS set them).
 */

const {
  seed: SEED,
  requests: REQUESTS,
  timeoutMs: TIMEOUT_MS,
} = fuzzRun("console fuzz", {
  seed: 20261125,
  requests: 1_500,
});

const errorLines: string[] = [];
let app: App;
let ctx: AppContext;
let database: TestDatabase;
let partner: Partner;
let admin: ConsoleClient;
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
  const caseId = await createStoredCase(ctx, partner.tenantId, "in_review");
  const { rfiId } = await raiseRfi(app, partner, caseId);
  const other = await createConsoleUser(app, partner.tenantId, "analyst", { setPassword: false });
  admin = await signIn(app, await createConsoleUser(app, partner.tenantId, "admin"));
  await admin.get("/console/queue");
  // The admin's own user id is never offered: the fuzzer would delete its own session's user.
  Object.assign(ids, { caseId, rfiId, userId: other.userId, keyId: partner.keyId, webhookKey: "default" });
});

afterAll(async () => {
  await app?.close();
  await database?.drop();
  if (ctx) fs.rmSync(ctx.config.dataDir, { recursive: true, force: true });
});

interface Route {
  method: string;
  path: string;
}

/** The console's routes, read from Fastify's route tree (`printRoutes`). */
function consoleRoutes(): Route[] {
  const lines = app.printRoutes({ commonPrefix: false }).split("\n");
  const stack: string[] = [];
  const found: Route[] = [];
  for (const line of lines) {
    const match = /^([│ ]*)[├└]── (\S+) \(([^)]+)\)/.exec(line);
    if (!match) continue;
    const depth = (match[1] ?? "").length / 4;
    stack.length = depth;
    stack.push(match[2] ?? "");
    const path = stack.join("");
    if (!path.startsWith("/console")) continue;
    for (const method of (match[3] ?? "").split(", ")) if (method !== "HEAD") found.push({ method, path });
  }
  return found;
}

const HOSTILE = [
  "",
  " ",
  "\u0000",
  "\ud800",
  "\ud83d\ude00",
  "%zz",
  "../../etc/passwd",
  "<script>alert(1)</script>",
  "' OR 1=1 --",
  "-1",
  "1e309",
  "9".repeat(400),
  "x".repeat(70_000),
  "00000000-0000-0000-0000-000000000000",
  "__proto__",
  "constructor",
  "2026-02-30T25:61",
  "approved",
  "admin",
  "a@example.com",
  "https://127.0.0.1:1/x",
];

const hostileString = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...HOSTILE) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 200 }) },
);

const FIELDS = [
  "body",
  "confirm",
  "email",
  "enabled",
  "expiresAt",
  "fieldKey",
  "fieldValue",
  "maxAttempts",
  "name",
  "next",
  "password",
  "reason",
  "role",
  "scopes",
  "secret",
  "secretId",
  "subject",
  "tag",
  "timeoutMs",
  "to",
  "token",
  "uploadId",
  "url",
  "value",
  "webhookKey",
  "filename",
  "contentType",
  "sizeBytes",
  "__proto__",
];

const fieldName = fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...FIELDS) }, hostileString);
const jsonValue: fc.Arbitrary<unknown> = fc.oneof(
  hostileString,
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom(null, true, 0, -1, 1e308, [], {}, [1, "a"], { a: { b: 1 } }),
);

/** Percent-encodes what a client can send; a lone surrogate goes as its (invalid) UTF-8 bytes. */
function encode(value: string): string {
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

type Body =
  | { kind: "none" }
  | { kind: "form"; pairs: [string, string][] }
  | { kind: "json"; value: unknown }
  | { kind: "raw"; text: string; type: string };

const bodyArbitrary: fc.Arbitrary<Body> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .array(fc.tuple(fieldName, hostileString), { maxLength: 8 })
      .map((pairs): Body => ({ kind: "form", pairs })),
  },
  {
    weight: 3,
    arbitrary: fc
      .oneof(fc.dictionary(fieldName, jsonValue, { maxKeys: 6 }), jsonValue)
      .map((value): Body => ({ kind: "json", value })),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.constantFrom(
          "application/json",
          "text/plain",
          "application/x-www-form-urlencoded",
          "multipart/form-data; boundary=x",
          "application/json; charset=latin1",
        ),
        fc.oneof(fc.constantFrom("{", "a=%", "a=%ZZ&&=&b", "nul", '{"a":"\\u0000"}', "a[b]=1"), fc.string()),
      )
      .map(([type, text]): Body => ({ kind: "raw", text, type })),
  },
  { weight: 1, arbitrary: fc.constant<Body>({ kind: "none" }) },
);

function pathValue(name: string): fc.Arbitrary<string> {
  const real = ids[name];
  const others = [fc.uuid(), hostileString.map(encode), fc.constantFrom("%zz", "%00", "a%2Fb", "%ED%A0%80")];
  return real ? fc.oneof({ weight: 4, arbitrary: fc.constant(real) }, ...others) : fc.oneof(...others);
}

function requestOf(route: Route) {
  const names = [...route.path.matchAll(/:([A-Za-z]+)/g)].map((m) => m[1] ?? "");
  return fc.record({
    params: fc.record(Object.fromEntries(names.map((n) => [n, pathValue(n)]))),
    query: fc.array(fc.tuple(fieldName, hostileString), { maxLength: 3 }),
    body: route.method === "GET" ? fc.constant<Body>({ kind: "none" }) : bodyArbitrary,
    session: fc.boolean(),
    csrf: fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, fc.constant(false)),
  });
}

describe("fuzzing every console route", () => {
  it(
    "never answers 5xx, with or without a session; nothing is logged as an error",
    async () => {
      const routes = consoleRoutes();
      expect(routes.length).toBeGreaterThan(25);
      const perRoute = Math.max(1, Math.ceil(REQUESTS / routes.length));
      let sent = 0;
      for (const [index, route] of routes.entries()) {
        // Signing out would end the session the rest of the run uses: it is fuzzed without one.
        const signOut = route.path === "/console/sign-out";
        await fc.assert(
          fc.asyncProperty(requestOf(route), async ({ params, query, body, session, csrf }) => {
            const path = route.path.replace(/:([A-Za-z]+)/g, (_m, n: string) => params[n] ?? "x");
            const qs = query.map(([k, v]) => `${encode(k)}=${encode(v)}`).join("&");
            const url = qs ? `${path}?${qs}` : path;
            const withSession = session && !signOut;
            const headers: Record<string, string> = {};
            if (withSession) headers.cookie = [...admin.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
            if (withSession && csrf) headers["csrf-token"] = admin.csrf;
            let payload: string | undefined;
            if (body.kind === "form") {
              payload = body.pairs.map(([k, v]) => `${encode(k)}=${encode(v)}`).join("&");
              headers["content-type"] = "application/x-www-form-urlencoded";
            } else if (body.kind === "json") {
              payload = JSON.stringify(body.value);
              headers["content-type"] = "application/json";
            } else if (body.kind === "raw") {
              payload = body.text;
              headers["content-type"] = body.type;
            }
            const res = await app.inject({ method: route.method as "GET", url, headers, payload });
            sent += 1;
            const where = `${route.method} ${url.slice(0, 200)} ${String(payload).slice(0, 200)}`;
            expect(res.statusCode, `${where} → ${res.body.slice(0, 300)}`).toBeLessThan(500);
            expect(res.headers["x-request-id"], where).toBeTruthy();
          }),
          { seed: SEED + index, numRuns: perRoute, endOnFailure: true },
        );
      }
      expect(sent).toBeGreaterThanOrEqual(REQUESTS);
      expect(errorLines, errorLines.join("\n").slice(0, 2000)).toEqual([]);
    },
    TIMEOUT_MS,
  );
});
