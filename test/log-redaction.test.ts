import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { App } from "../src/platform/app-types.js";
import type { AppContext } from "../src/platform/context.js";
import { adminHeaders, createPartner, createStoredCase, type Partner } from "./support/fixtures.js";
import { type LoggedService, startLoggedService } from "./support/logged.js";
import { answerRfi, openRequest } from "./support/rfi.js";
import { amountScreen, createWorkflow, kycSubject, waitForCase } from "./support/workflows.js";

/**
 * Logs never carry customer personal data, on error paths too (contract section 1). Every field
 * below holds a marker; the requests drive the error paths the service has (refused text, deep
 * nesting, invalid JSON, failed validation, a failing workflow), and no marker may reach a line.
 */

let service: LoggedService;
let app: App;
let ctx: AppContext;
let lines: string[];
let partner: Partner;

beforeAll(async () => {
  service = await startLoggedService();
  ({ app, ctx, lines } = service);
  partner = await createPartner(app);
  await createWorkflow(app, partner.tenantId, "screen", amountScreen);
});

afterAll(async () => {
  await service?.close();
});

let counter = 0;
const markers: string[] = [];
/** A fresh marker, optionally followed by text PostgreSQL refuses, so that the request fails. */
function m(suffix = ""): string {
  counter += 1;
  const mark = `PII${String(counter).padStart(4, "0")}MARK`;
  markers.push(mark);
  return `${mark}${suffix}`;
}

function expectNoMarker(): void {
  const log = lines.join("");
  for (const mark of markers) expect(log, mark).not.toContain(mark);
}

describe("personal data in logs", () => {
  it("no marker from a refused case submission reaches the log", async () => {
    for (const suffix of ["\u0000", "\ud800", ""]) {
      await app.inject({
        method: "POST",
        url: "/cases",
        headers: partner.headers,
        payload: {
          workflowId: "screen",
          type: "KYC",
          idempotencyKey: m(suffix),
          payload: { amount: m(suffix), [m(suffix)]: m(suffix) },
          metadata: { note: m(suffix) },
          subject: {
            ...kycSubject,
            person: {
              ...kycSubject.person,
              firstName: m(suffix),
              lastName: m(suffix),
              email: m(suffix),
              phone: m(suffix),
              dateOfBirth: m(suffix),
            },
          },
        },
      });
    }
    const raw = `{"workflowId":"screen","payload":{"x":"${m()}"`;
    await app.inject({
      method: "POST",
      url: "/cases",
      headers: { ...partner.headers, "content-type": "application/json" },
      payload: raw,
    });
    expect(lines.length).toBeGreaterThan(0);
    expectNoMarker();
  });

  it("no marker from refused RFIs, answers, attributes, names or an override reaches the log", async () => {
    const { caseId, rfiId } = await openRequest(app, ctx, partner);
    for (const suffix of ["\u0000", "\ud800", ""]) {
      await app.inject({
        method: "POST",
        url: `/cases/${caseId}/rfi`,
        headers: partner.headers,
        payload: { to: m(suffix), subject: m(suffix), body: m(suffix), templateId: m(suffix) },
      });
      await answerRfi(app, partner, caseId, rfiId, {
        fields: [{ key: "a", value: m(suffix), label: m(suffix) }],
      });
      await app.inject({
        method: "POST",
        url: "/customer-attributes",
        headers: partner.headers,
        payload: { externalCustomerId: m(suffix), attributes: { segment: m(suffix) } },
      });
      await app.inject({
        method: "POST",
        url: "/admin/tenants",
        headers: adminHeaders,
        payload: { name: m(suffix) },
      });
      const stored = await createStoredCase(ctx, partner.tenantId, "in_review");
      await app.inject({
        method: "POST",
        url: `/admin/cases/${stored}/decision`,
        headers: adminHeaders,
        payload: { value: "approved", actor: "jane", reason: m(suffix) },
      });
    }
    expectNoMarker();
  });

  it("no marker reaches the log from a workflow that fails on a case's data", async () => {
    await createWorkflow(app, partner.tenantId, "failing", {
      inputSchema: { type: "object" },
      start: "check",
      nodes: [
        {
          id: "check",
          type: "rules",
          rules: [{ when: "int(payload.name) > 3", next: "yes" }],
          default: "yes",
        },
        { id: "yes", type: "decision", decision: "approved" },
      ],
    });
    const res = await app.inject({
      method: "POST",
      url: "/cases",
      headers: partner.headers,
      payload: { workflowId: "failing", type: "KYC", payload: { name: m() }, subject: kycSubject },
    });
    expect(res.statusCode).toBe(201);
    const record = await waitForCase(app, partner.headers, res.json().caseId);
    expect(record.status).toBe("failed");
    expectNoMarker();
  });

  it("a database error is logged with its code, without the data it quotes in where, detail or message", async () => {
    const secret = m();
    let caught: unknown;
    try {
      await sql`SELECT ${`{"name": "${secret}\\u0000"}`}::jsonb`.execute(ctx.db.root);
    } catch (err) {
      caught = err;
    }
    try {
      await sql`SELECT ${secret}::uuid`.execute(ctx.db.root);
    } catch (err) {
      ctx.log.error({ err }, "second failure");
    }
    expect(caught).toBeInstanceOf(Error);
    ctx.log.error({ err: caught }, "a query failed");
    const first = lines.find((l) => l.includes("a query failed"));
    const second = lines.find((l) => l.includes("second failure"));
    expect(JSON.parse(first as string).err).toMatchObject({ code: expect.stringMatching(/^22/) });
    expect(JSON.parse(second as string).err).toMatchObject({
      code: "22P02",
      message: expect.stringContaining("uuid"),
    });
    expectNoMarker();
  });
});

describe("secret path segments in logs", () => {
  it("no callback ref the service minted, nor a handle or vendor token in a path, reaches the log", async () => {
    await createWorkflow(app, partner.tenantId, "callback", {
      inputSchema: { type: "object" },
      start: "verify",
      nodes: [
        {
          id: "verify",
          type: "external_callback",
          webhookKey: "idv",
          payload: {},
          expiresInSeconds: 3600,
          next: "ok",
        },
        { id: "ok", type: "decision", decision: "approved" },
      ],
    });
    const refs: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await app.inject({
        method: "POST",
        url: "/cases",
        headers: partner.headers,
        payload: { workflowId: "callback", type: "KYC", payload: {}, subject: kycSubject },
      });
      const caseId = res.json().caseId as string;
      await waitForCase(app, partner.headers, caseId, (c) => c.status === "waiting");
      const dispatch = await ctx.db.root
        .selectFrom("events")
        .select("payload")
        .where("case_id", "=", caseId)
        .where("event_type", "=", "external_callback.dispatch")
        .executeTakeFirstOrThrow();
      const path = new URL((dispatch.payload as { callbackUrl: string }).callbackUrl).pathname;
      refs.push(path.split("/").at(-1) as string);
      // A refused body first (400), then the real result (202), then again (409): three logged requests.
      for (const payload of [{ nope: 1 }, { result: "clear" }, { result: "clear" }]) {
        await app.inject({ method: "POST", url: path, headers: partner.headers, payload });
      }
      await waitForCase(app, partner.headers, caseId, (c) => c.status === "decided");
    }
    // Handles and vendor tokens in paths, with the shapes the service mints, to routes that refuse them.
    const guessed = [
      crypto.randomUUID(),
      crypto.randomUUID(),
      `tok${crypto.randomUUID().replaceAll("-", "")}`,
    ];
    await app.inject({
      method: "POST",
      url: `/pending/${guessed[0]}/actions/refresh`,
      headers: partner.headers,
    });
    await app.inject({
      method: "POST",
      url: `/pending/${guessed[1]}/actions/x?y=1`,
      headers: partner.headers,
    });
    await app.inject({ method: "POST", url: `/providers/sumsub/webhooks/${guessed[2]}`, payload: {} });
    const log = lines.join("");
    // The requests were logged (with their paths), only without the secrets.
    expect(log).toContain("/callbacks/…");
    expect(log).toContain("/pending/…/actions/refresh");
    expect(log).toContain("/providers/sumsub/webhooks/…");
    expect(refs).toHaveLength(5);
    for (const secret of [...refs, ...guessed]) expect(log, secret).not.toContain(secret);
  });
});
