import type { AddressInfo } from "node:net";
import { setTimeout as delay } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../src/main.js";
import { type EventType, emitEvent } from "../src/modules/webhooks/events.js";
import { ADMIN_TOKEN, createTestApp, type TestApp } from "./support/app.js";
import { adminHeaders, createStoredCase, createTenant } from "./support/fixtures.js";
import { configureWebhook, Receiver, TEST_WEBHOOK_SECRET } from "./support/receiver.js";

let h: TestApp;
let receiver: Receiver;

beforeAll(async () => {
  h = await createTestApp();
  receiver = await Receiver.start();
  await h.startWorker();
});
afterAll(async () => {
  await h.close();
  await receiver.close();
});

// biome-ignore lint/suspicious/noExplicitAny: API answers are read as JSON
type Json = any;

let paths = 0;
async function tenantWithHook(maxAttempts = 1): Promise<{ tenantId: string; path: string }> {
  const tenantId = await createTenant(h.app);
  const path = `/log/${++paths}`;
  await configureWebhook(h.app, adminHeaders, tenantId, { url: receiver.url(path), maxAttempts });
  return { tenantId, path };
}

function emit(tenantId: string, caseId: string, type: EventType = "case.decided", extra: object = {}) {
  const payload =
    type === "case.rfi_requested"
      ? {
          event_type: type,
          tenant_id: tenantId,
          case_id: caseId,
          rfi_id: "6f1d4a8e-4c1b-4a63-9d7e-0c0f2f9a1b11",
        }
      : { event_type: type, case_id: caseId, tenant_id: tenantId, timestamp: new Date().toISOString() };
  return h.ctx.db.transaction((tx) =>
    emitEvent(tx, {
      tenantId,
      caseId,
      type,
      webhookKey: null,
      dryRun: false,
      payload: { ...payload, ...extra },
    }),
  );
}

async function list(tenantId: string, query = ""): Promise<Json> {
  const res = await h.app.inject({
    method: "GET",
    url: `/admin/tenants/${tenantId}/webhook-deliveries${query}`,
    headers: adminHeaders,
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

async function until(tenantId: string, done: (deliveries: Json[]) => boolean): Promise<Json[]> {
  for (let i = 0; ; i++) {
    const { deliveries } = await list(tenantId, "?limit=100");
    if (done(deliveries)) return deliveries;
    if (i > 400) throw new Error(`deliveries never settled: ${JSON.stringify(deliveries)}`);
    await delay(25);
  }
}

/** At least n deliveries, none due or being attempted: each is done, or waits for a later attempt. */
const noneInFlight = (n: number) => (ds: Json[]) =>
  ds.length >= n &&
  ds.every(
    (d: Json) =>
      d.status !== "pending" || (d.nextAttemptAt !== null && Date.parse(d.nextAttemptAt) > Date.now()),
  );

describe("GET /admin/tenants/{t}/webhook-deliveries", () => {
  it("lists deliveries newest first with every attempt, filtered by status, event type and case", async () => {
    const { tenantId, path } = await tenantWithHook(3);
    const caseA = await createStoredCase(h.ctx, tenantId);
    const caseB = await createStoredCase(h.ctx, tenantId);
    const long = "x".repeat(5000);
    receiver.on(path, (r) => {
      const body = r.json();
      if (body.case_id === caseB) return { status: 400, body: long };
      if (body.retry) return { status: 503, headers: { "retry-after": "600" } };
      return { status: 200, body: "thanks" };
    });
    const e1 = await emit(tenantId, caseA);
    const e2 = await emit(tenantId, caseB, "case.rfi_requested");
    const e3 = await emit(tenantId, caseA, "case.decided", { retry: true });
    const all = await until(
      tenantId,
      (ds) => ds.map((d: Json) => d.status).join() === "pending,failed,succeeded" && ds[0].attemptCount === 1,
    );
    expect(all.map((d: Json) => d.eventId)).toEqual([e3, e2, e1]);

    const [pending, failed, succeeded] = all;
    expect(succeeded).toMatchObject({
      status: "succeeded",
      caseId: caseA,
      lastStatusCode: 200,
      lastError: null,
    });
    expect(succeeded.completedAt).not.toBeNull();
    expect(succeeded.attempts[0]).toMatchObject({
      attempt: 1,
      statusCode: 200,
      error: null,
      responseBody: "thanks",
    });
    expect(succeeded.attempts[0].latencyMs).toBeGreaterThanOrEqual(0);
    expect(Date.parse(succeeded.attempts[0].at)).toBeGreaterThan(Date.now() - 60_000);

    expect(failed).toMatchObject({ status: "failed", eventType: "case.rfi_requested", lastStatusCode: 400 });
    expect(failed.attempts.map((a: Json) => a.error)).toEqual(["HTTP 400", "HTTP 400", "HTTP 400"]);
    expect(failed.attempts[0].responseBody).toBe("x".repeat(2048));

    expect(pending).toMatchObject({ status: "pending", attemptCount: 1, lastStatusCode: 503 });
    const wait = Date.parse(pending.nextAttemptAt) - Date.now();
    expect(wait).toBeGreaterThan(590_000);
    expect(wait).toBeLessThan(601_000);

    const ids = (ds: Json[]) => ds.map((d: Json) => d.eventId);
    expect(ids((await list(tenantId, "?status=failed")).deliveries)).toEqual([e2]);
    expect(ids((await list(tenantId, "?status=succeeded")).deliveries)).toEqual([e1]);
    expect(ids((await list(tenantId, "?status=pending")).deliveries)).toEqual([e3]);
    expect(ids((await list(tenantId, "?eventType=case.rfi_requested")).deliveries)).toEqual([e2]);
    expect(ids((await list(tenantId, `?caseId=${caseA}`)).deliveries)).toEqual([e3, e1]);
    expect(ids((await list(tenantId, `?caseId=${caseA}&status=succeeded`)).deliveries)).toEqual([e1]);
    expect((await list(await createTenant(h.app))).deliveries).toEqual([]);
  });

  it("pages with a cursor, newest first, until nextCursor is null", async () => {
    const { tenantId } = await tenantWithHook();
    const caseId = await createStoredCase(h.ctx, tenantId);
    const emitted: string[] = [];
    for (let i = 0; i < 7; i++) emitted.push(await emit(tenantId, caseId));
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: Json = await list(tenantId, `?limit=3${cursor ? `&cursor=${cursor}` : ""}`);
      seen.push(...page.deliveries.map((d: Json) => d.eventId));
      cursor = page.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual([...emitted].reverse());
  });

  it("answers 400 for a bad filter, limit or cursor, naming it, and 404 for an unknown tenant", async () => {
    const { tenantId } = await tenantWithHook();
    const bad: Array<[string, string]> = [
      ["?status=done", "status"],
      ["?eventType=case.exploded", "eventType"],
      ["?caseId=not-a-uuid", "caseId"],
      ["?limit=0", "limit"],
      ["?limit=101", "limit"],
      ["?cursor=bm9wZQ", "cursor"],
    ];
    for (const [query, path] of bad) {
      const res = await h.app.inject({
        method: "GET",
        url: `/admin/tenants/${tenantId}/webhook-deliveries${query}`,
        headers: adminHeaders,
      });
      expect(res.statusCode, query).toBe(400);
      expect(res.json().details[0].path, query).toBe(path);
    }
    const unknown = await h.app.inject({
      method: "GET",
      url: "/admin/tenants/00000000-0000-4000-8000-000000000000/webhook-deliveries",
      headers: adminHeaders,
    });
    expect(unknown.statusCode).toBe(404);
  });
});

describe("redelivery", () => {
  it("sends one delivery's event again as a new delivery with a fresh webhookId: 202", async () => {
    const { tenantId, path } = await tenantWithHook();
    const caseId = await createStoredCase(h.ctx, tenantId);
    await emit(tenantId, caseId);
    const [original] = await until(tenantId, noneInFlight(1));
    const res = await h.app.inject({
      method: "POST",
      url: `/admin/webhook-deliveries/${original.deliveryId}/redeliver`,
      headers: adminHeaders,
    });
    expect(res.statusCode).toBe(202);
    const created = res.json();
    expect(created).toMatchObject({
      redeliveryOf: original.deliveryId,
      eventId: original.eventId,
      status: "pending",
    });
    expect(created.webhookId).not.toBe(original.webhookId);

    const [first, second] = await receiver.waitFor(2, { path });
    if (!first || !second) throw new Error("expected two requests");
    expect(first.json().webhookId).toBe(original.webhookId);
    expect(second.json().webhookId).toBe(created.webhookId);
    expect(second.text()).toBe(first.text().replace(original.webhookId, created.webhookId));

    const after = await until(
      tenantId,
      (ds) => ds.length === 2 && ds.every((d: Json) => d.status === "succeeded"),
    );
    expect(after[1]).toMatchObject({ deliveryId: original.deliveryId, redeliveredAs: created.deliveryId });

    const shown = await h.app.inject({
      method: "GET",
      url: `/admin/webhook-deliveries/${created.deliveryId}`,
      headers: adminHeaders,
    });
    expect(shown.json()).toMatchObject({ tenantId, deliveryId: created.deliveryId, body: second.text() });

    for (const id of ["00000000-0000-4000-8000-000000000000", "nope"]) {
      const missing = await h.app.inject({
        method: "POST",
        url: `/admin/webhook-deliveries/${id}/redeliver`,
        headers: adminHeaders,
      });
      expect(missing.statusCode).toBe(404);
    }
  });

  it("redelivers every failed delivery since a time, each event once however often asked", async () => {
    const { tenantId, path } = await tenantWithHook();
    const caseId = await createStoredCase(h.ctx, tenantId);
    let up = false;
    receiver.on(path, () => (up ? {} : { status: 500 }));
    const before = await emit(tenantId, caseId);
    await until(tenantId, noneInFlight(1));
    await delay(20);
    const since = new Date().toISOString();
    const inWindow = [await emit(tenantId, caseId, "case.pending_review"), await emit(tenantId, caseId)];
    const failed = await until(
      tenantId,
      (ds) => ds.length === 3 && ds.every((d: Json) => d.status === "failed"),
    );
    up = true;

    const url = `/admin/tenants/${tenantId}/webhook-deliveries/redeliver-failed`;
    const res = await h.app.inject({ method: "POST", url, headers: adminHeaders, payload: { since } });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toMatchObject({ redelivered: 2, hasMore: false });
    const again = await h.app.inject({ method: "POST", url, headers: adminHeaders, payload: { since } });
    expect(again.json()).toEqual({ redelivered: 0, deliveryIds: [], hasMore: false });

    const all = await until(
      tenantId,
      (ds) => ds.length === 5 && ds.every((d: Json) => d.status !== "pending"),
    );
    const redelivered = all.filter((d: Json) => d.redeliveryOf !== null);
    expect(redelivered.map((d: Json) => d.eventId).sort()).toEqual([...inWindow].sort());
    expect(redelivered.every((d: Json) => d.status === "succeeded")).toBe(true);
    const originals = new Map(failed.map((d: Json) => [d.deliveryId, d.webhookId]));
    for (const d of redelivered) expect(d.webhookId).not.toBe(originals.get(d.redeliveryOf));
    expect(all.find((d: Json) => d.eventId === before && d.redeliveryOf !== null)).toBeUndefined();

    const bad = [
      [{}, "since"],
      [{ since: "yesterday" }, "since"],
      [{ since, until: since }, "until"],
      [{ since, eventType: "case.nope" }, "eventType"],
    ] as const;
    for (const [payload, field] of bad) {
      const r = await h.app.inject({ method: "POST", url, headers: adminHeaders, payload });
      expect(r.statusCode, JSON.stringify(payload)).toBe(400);
      expect(r.json().details[0].path).toBe(field);
    }
  });
});

describe("cds webhook and cds delivery", () => {
  let base: string;
  beforeAll(async () => {
    await h.app.listen({ port: 0, host: "127.0.0.1" });
    base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
  });

  async function cds(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
    let out = "";
    let err = "";
    const code = await runCli(["--url", base, "--token", ADMIN_TOKEN, ...argv], {
      env: {},
      stdout: (t) => {
        out += t;
      },
      stderr: (t) => {
        err += t;
      },
    });
    return { code, out, err };
  }

  it("sets and lists configurations, lists, shows and redelivers deliveries", async () => {
    const tenantId = await createTenant(h.app);
    const path = `/log/${++paths}`;
    receiver.on(path, (_r, i) => (i === 0 ? { status: 500 } : {}));
    const set = await cds(
      "webhook",
      "set",
      "--tenant",
      tenantId,
      "--endpoint",
      receiver.url(path),
      "--secret",
      `s1=${TEST_WEBHOOK_SECRET}`,
      "--max-attempts",
      "1",
      "--timeout-ms",
      "2000",
    );
    expect(set.code, set.err).toBe(0);
    expect(JSON.parse(set.out)).toMatchObject({
      webhookKey: "default",
      activeSecretId: "s1",
      maxAttempts: 1,
      timeoutMs: 2000,
    });
    expect(set.out).not.toContain(TEST_WEBHOOK_SECRET);
    const listed = await cds("webhook", "list", "--tenant", tenantId);
    expect(JSON.parse(listed.out).webhooks).toHaveLength(1);
    expect(listed.out).not.toContain(TEST_WEBHOOK_SECRET);

    const caseId = await createStoredCase(h.ctx, tenantId);
    await emit(tenantId, caseId);
    const [failed] = await until(tenantId, noneInFlight(1));
    const failedList = await cds(
      "delivery",
      "list",
      "--tenant",
      tenantId,
      "--status",
      "failed",
      "--case",
      caseId,
    );
    expect(failedList.code).toBe(0);
    expect(JSON.parse(failedList.out).deliveries.map((d: Json) => d.deliveryId)).toEqual([failed.deliveryId]);

    const shown = await cds("delivery", "show", failed.deliveryId);
    expect(JSON.parse(shown.out)).toMatchObject({
      deliveryId: failed.deliveryId,
      body: expect.stringContaining(caseId),
    });

    const one = await cds("delivery", "redeliver", failed.deliveryId);
    expect(one.code).toBe(0);
    expect(JSON.parse(one.out)).toMatchObject({ redeliveryOf: failed.deliveryId, status: "pending" });
    await until(tenantId, (ds) => ds.length === 2 && ds[0].status === "succeeded");

    await cds(
      "webhook",
      "set",
      "--tenant",
      tenantId,
      "--endpoint",
      receiver.url("/log/none"),
      "--keep-secret",
      "s1",
      "--max-attempts",
      "1",
    );
    receiver.on("/log/none", { status: 500 });
    await emit(tenantId, caseId);
    await until(tenantId, (ds) => ds.length === 3 && ds[0].status === "failed");
    const bulk = await cds(
      "delivery",
      "redeliver-failed",
      "--tenant",
      tenantId,
      "--since",
      "2000-01-01T00:00:00Z",
    );
    expect(bulk.code, bulk.err).toBe(0);
    expect(JSON.parse(bulk.out)).toMatchObject({ redelivered: 1, hasMore: false });

    const deleted = await cds("webhook", "delete", "--tenant", tenantId, "--key", "default");
    expect(deleted.code).toBe(0);
    expect(JSON.parse((await cds("webhook", "list", "--tenant", tenantId)).out).webhooks).toEqual([]);
  });

  it("exits 1 with the service's reason for a refused request", async () => {
    const tenantId = await createTenant(h.app);
    const badStatus = await cds("delivery", "list", "--tenant", tenantId, "--status", "done");
    expect(badStatus.code).toBe(1);
    expect(badStatus.err).toMatch(/HTTP 400: status must be one of pending, succeeded, failed/);
    const noSecret = await cds(
      "webhook",
      "set",
      "--tenant",
      tenantId,
      "--endpoint",
      "https://hooks.example.com",
    );
    expect(noSecret.code).toBe(1);
    expect(noSecret.err).toMatch(/at least one --secret/);
    const shortSecret = await cds(
      "webhook",
      "set",
      "--tenant",
      tenantId,
      "--endpoint",
      "https://hooks.example.com",
      "--secret",
      "a=short",
    );
    expect(shortSecret.code).toBe(1);
    expect(shortSecret.err).toMatch(/secrets\[0\].secret: must be 16 to 512 characters/);
  });
});
