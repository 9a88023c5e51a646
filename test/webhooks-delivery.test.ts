import { setTimeout as delay } from "node:timers/promises";
import { verifyWebhook } from "@case-decisioning/verify-webhook";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emitEvent, type NewEvent } from "../src/modules/webhooks/events.js";
import { hmacHex } from "../src/platform/crypto.js";
import { createTestApp, type TestApp } from "./support/app.js";
import { adminHeaders, createStoredCase, createTenant } from "./support/fixtures.js";
import { configureWebhook, Receiver, TEST_WEBHOOK_SECRET, type WebhookSetup } from "./support/receiver.js";

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

interface Scenario {
  tenantId: string;
  caseId: string;
  path: string;
}

let paths = 0;
async function scenario(setup: Partial<WebhookSetup> = {}, webhookKey = "default"): Promise<Scenario> {
  const tenantId = await createTenant(h.app);
  const caseId = await createStoredCase(h.ctx, tenantId);
  const path = `/hooks/${++paths}`;
  await configureWebhook(h.app, adminHeaders, tenantId, { url: receiver.url(path), ...setup }, webhookKey);
  return { tenantId, caseId, path };
}

function decided(s: Scenario, webhookKey: string | null = null): NewEvent {
  return {
    tenantId: s.tenantId,
    caseId: s.caseId,
    type: "case.decided",
    webhookKey,
    dryRun: false,
    payload: {
      event_type: "case.decided",
      case_id: s.caseId,
      tenant_id: s.tenantId,
      result: {
        decision: {
          value: "approved",
          source: "workflow",
          actor: "workflow",
          decidedAt: "2025-03-01T10:00:00.000Z",
        },
        decisionHistory: [
          { value: "approved", source: "workflow", actor: "workflow", decidedAt: "2025-03-01T10:00:00.000Z" },
        ],
        workflow_result: { score: 12, note: "Zoë's ünïcode ✓" },
      },
      timestamp: "2025-03-01T10:00:00.000Z",
    },
  };
}

function emit(event: NewEvent): Promise<string> {
  return h.ctx.db.transaction((tx) => emitEvent(tx, event));
}

// biome-ignore lint/suspicious/noExplicitAny: delivery views are read as JSON
type Delivery = any;

async function deliveries(tenantId: string, query = ""): Promise<Delivery[]> {
  const res = await h.app.inject({
    method: "GET",
    url: `/admin/tenants/${tenantId}/webhook-deliveries${query}`,
    headers: adminHeaders,
  });
  expect(res.statusCode).toBe(200);
  return res.json().deliveries;
}

async function settled(tenantId: string, count = 1, timeoutMs = 20_000, query = ""): Promise<Delivery[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const list = await deliveries(tenantId, query);
    if (list.length >= count && list.every((d) => d.status !== "pending")) return list;
    if (Date.now() > deadline) throw new Error(`deliveries still pending: ${JSON.stringify(list)}`);
    await delay(50);
  }
}

describe("webhook delivery", () => {
  it("POSTs JSON signed with the active secret over exactly the bytes sent, webhookId first", async () => {
    const s = await scenario();
    const event = decided(s);
    const eventId = await emit(event);
    const [request] = await receiver.waitFor(1, { path: s.path });
    if (!request) throw new Error("no request");
    expect(request.method).toBe("POST");
    expect(request.headers["content-type"]).toBe("application/json");
    expect(request.headers["x-service-secret-id"]).toBe("s1");
    expect(request.headers["x-service-signature"]).toBe(hmacHex(TEST_WEBHOOK_SECRET, request.body));
    expect(request.text().startsWith('{"webhookId":"')).toBe(true);
    const body = request.json();
    expect(Object.keys(body)[0]).toBe("webhookId");
    expect(body).toEqual({ webhookId: expect.any(String), ...event.payload });
    expect(
      verifyWebhook({ body: request.body, headers: request.headers, secrets: { s1: TEST_WEBHOOK_SECRET } }),
    ).toBe(true);
    const tampered = Buffer.from(request.text().replace("approved", "declined"));
    expect(
      verifyWebhook({ body: tampered, headers: request.headers, secrets: { s1: TEST_WEBHOOK_SECRET } }),
    ).toBe(false);

    const [delivery] = await settled(s.tenantId);
    expect(delivery).toMatchObject({
      eventId,
      eventType: "case.decided",
      caseId: s.caseId,
      webhookKey: "default",
      webhookId: body.webhookId,
      status: "succeeded",
      attemptCount: 1,
    });
    expect(delivery.attempts).toEqual([
      expect.objectContaining({
        attempt: 1,
        statusCode: 200,
        error: null,
        secretId: "s1",
        target: receiver.url(s.path),
      }),
    ]);
  });

  it("routes an event with a webhook key to that configuration and others to default", async () => {
    const s = await scenario();
    const callbacksPath = `/hooks/${++paths}`;
    await configureWebhook(
      h.app,
      adminHeaders,
      s.tenantId,
      { url: receiver.url(callbacksPath) },
      "callbacks",
    );
    await emit(decided(s, "callbacks"));
    await emit(decided(s));
    await receiver.waitFor(1, { path: callbacksPath });
    await receiver.waitFor(1, { path: s.path });
    const list = await settled(s.tenantId, 2);
    expect(list.map((d: Delivery) => d.webhookKey).sort()).toEqual(["callbacks", "default"]);
    expect(receiver.received(callbacksPath)).toHaveLength(1);
    expect(receiver.received(s.path)).toHaveLength(1);
  });

  it("records a delivery to a configuration that does not exist as failed, naming it", async () => {
    const s = await scenario();
    await emit(decided(s, "no-such-hook"));
    const [delivery] = await settled(s.tenantId);
    expect(delivery.status).toBe("failed");
    expect(delivery.webhookKey).toBe("no-such-hook");
    expect(delivery.lastError).toMatch(/no webhook configuration "no-such-hook"/);
    expect(delivery.attempts).toEqual([]);
    expect(receiver.received(s.path)).toHaveLength(0);
  });

  it("a tenant without any configuration gets its deliveries recorded as failed", async () => {
    const tenantId = await createTenant(h.app);
    const caseId = await createStoredCase(h.ctx, tenantId);
    await emit(decided({ tenantId, caseId, path: "" }));
    const [delivery] = await settled(tenantId);
    expect(delivery).toMatchObject({ status: "failed", webhookKey: "default" });
    expect(delivery.lastError).toMatch(/no webhook configuration "default"/);
  });

  it("uses a configuration created right after a delivery failed for want of it, and retries its attempts", async () => {
    const tenantId = await createTenant(h.app);
    const caseId = await createStoredCase(h.ctx, tenantId);
    const s = { tenantId, caseId, path: `/hooks/${++paths}` };
    await emit(decided(s));
    await settled(tenantId);
    await configureWebhook(h.app, adminHeaders, tenantId, { url: receiver.url(s.path), maxAttempts: 2 });
    receiver.on(s.path, (_request, index) => (index === 0 ? { status: 500 } : {}));
    await emit(decided(s));
    const requests = await receiver.waitFor(2, { path: s.path, timeoutMs: 10_000 });
    expect(new Set(requests.map((r) => r.json().webhookId)).size).toBe(1);
    const [latest] = await settled(tenantId, 2);
    expect(latest).toMatchObject({ status: "succeeded", attemptCount: 2 });
  });
});

describe.concurrent("retries", () => {
  it("retries a failing endpoint after 1 s, 2 s and 4 s with the same bytes, then fails after maxAttempts", async () => {
    const s = await scenario({ maxAttempts: 4 });
    receiver.on(s.path, { status: 500, body: "upstream exploded" });
    await emit(decided(s));
    const requests = await receiver.waitFor(4, { path: s.path, timeoutMs: 20_000 });
    const gaps = requests.slice(1).map((r, i) => r.at - (requests[i]?.at ?? 0));
    for (const [i, expected] of [1000, 2000, 4000].entries()) {
      // Never early; how late depends on the machine, so only the order of the gaps is asked of it.
      expect(gaps[i]).toBeGreaterThanOrEqual(expected - 20);
    }
    expect(new Set(requests.map((r) => r.body.toString("hex"))).size).toBe(1);
    expect(new Set(requests.map((r) => r.json().webhookId)).size).toBe(1);

    const [delivery] = await settled(s.tenantId);
    expect(delivery.status).toBe("failed");
    expect(delivery.attemptCount).toBe(4);
    expect(delivery.nextAttemptAt).toBeNull();
    expect(delivery.attempts.map((a: Delivery) => [a.attempt, a.statusCode, a.error])).toEqual([
      [1, 500, "HTTP 500"],
      [2, 500, "HTTP 500"],
      [3, 500, "HTTP 500"],
      [4, 500, "HTTP 500"],
    ]);
    expect(delivery.attempts[0].responseBody).toBe("upstream exploded");
    // No further attempt comes, and no claim is left (it is deleted with the last outcome it holds).
    await delay(1500);
    expect(receiver.received(s.path)).toHaveLength(4);
    const claims = await h.ctx.db.root
      .selectFrom("webhook_claims")
      .select("id")
      .where(sql<boolean>`${delivery.deliveryId}::uuid = ANY(deliveries)`)
      .execute();
    expect(claims).toEqual([]);
  });

  it("stops after the configured maxAttempts; a configuration that names none gets 5 attempts and 10 s", async () => {
    const s = await scenario({ maxAttempts: 2 });
    receiver.on(s.path, { status: 503 });
    await emit(decided(s));
    await receiver.waitFor(2, { path: s.path });
    const [delivery] = await settled(s.tenantId);
    expect(delivery).toMatchObject({ status: "failed", attemptCount: 2, lastStatusCode: 503 });
    const config = await h.app.inject({
      method: "GET",
      url: `/admin/tenants/${s.tenantId}/webhooks/default`,
      headers: adminHeaders,
    });
    expect(config.json().maxAttempts).toBe(2);
    const defaults = await scenario();
    const res = await h.app.inject({
      method: "GET",
      url: `/admin/tenants/${defaults.tenantId}/webhooks/default`,
      headers: adminHeaders,
    });
    expect(res.json()).toMatchObject({ maxAttempts: 5, timeoutMs: 10_000 });
  });

  it("counts a 3xx answer as a failed attempt and does not follow it", async () => {
    const s = await scenario();
    const elsewhere = `/hooks/${++paths}`;
    receiver.on(s.path, (_r, i) =>
      i === 0 ? { status: 302, headers: { location: receiver.url(elsewhere) } } : {},
    );
    await emit(decided(s));
    await receiver.waitFor(2, { path: s.path });
    const [delivery] = await settled(s.tenantId);
    expect(delivery.status).toBe("succeeded");
    expect(delivery.attempts.map((a: Delivery) => a.statusCode)).toEqual([302, 200]);
    expect(receiver.received(elsewhere)).toHaveLength(0);
  });

  it("counts a receiver that stalls past timeoutMs as a failed attempt", async () => {
    // Long enough that the answer at once to the retry arrives within it on a loaded machine.
    const s = await scenario({ timeoutMs: 2_000 });
    receiver.on(s.path, (_r, i) => (i === 0 ? { stall: true } : { status: 204 }));
    await emit(decided(s));
    const requests = await receiver.waitFor(2, { path: s.path });
    const [delivery] = await settled(s.tenantId);
    expect(delivery.status).toBe("succeeded");
    const [first, second] = delivery.attempts;
    expect(first.statusCode).toBeNull();
    expect(first.error).toMatch(/timed out after 2000 ms/);
    expect(first.latencyMs).toBeGreaterThanOrEqual(1_995);
    expect(second.statusCode).toBe(204);
    expect(requests).toHaveLength(2);
    // The timeout, then the first retry's delay of a second, from the attempts' own starts (the
    // receiver sees the first one arrive a little after it started).
    const gap = Date.parse(second.at) - Date.parse(first.at);
    expect(gap).toBeGreaterThanOrEqual(3_000 - 20);
  });

  it("counts a slow body past timeoutMs as a failed attempt even when the status came in time", async () => {
    const s = await scenario({ timeoutMs: 300, maxAttempts: 1 });
    receiver.on(s.path, { status: 200, body: "ok", bodyDelayMs: 600 });
    await emit(decided(s));
    const [delivery] = await settled(s.tenantId);
    expect(delivery.status).toBe("failed");
    expect(delivery.attempts[0].error).toMatch(/timed out/);
  });

  it("decides by the status when the answer's body runs past what is read of it, without waiting for its end", async () => {
    const s = await scenario({ timeoutMs: 30_000, maxAttempts: 1 });
    // 100 KB at once, and the end only long after the attempt's deadline.
    receiver.on(s.path, { status: 200, bodyFirst: "y".repeat(100_000), bodyDelayMs: 120_000 });
    await emit(decided(s));
    const [delivery] = await settled(s.tenantId);
    expect(delivery.status).toBe("succeeded");
    expect(delivery.attempts[0]).toMatchObject({
      statusCode: 200,
      error: null,
      responseBody: "y".repeat(2048),
    });
  });

  it("retries a refused connection", async () => {
    const closed = await Receiver.start();
    const url = closed.url("/gone");
    await closed.close();
    const s = await scenario({ url, maxAttempts: 2 });
    await emit(decided(s));
    const [delivery] = await settled(s.tenantId);
    expect(delivery.status).toBe("failed");
    expect(delivery.attempts).toHaveLength(2);
    for (const a of delivery.attempts) {
      expect(a.statusCode).toBeNull();
      expect(a.error).toMatch(/connection refused/);
    }
    const gap = Date.parse(delivery.attempts[1].at) - Date.parse(delivery.attempts[0].at);
    expect(gap).toBeGreaterThanOrEqual(980);
  });

  it("retries an unresolvable host as a DNS failure", async () => {
    const s = await scenario({ url: "http://no-such-host.invalid/hook", maxAttempts: 1 });
    await emit(decided(s));
    const [delivery] = await settled(s.tenantId);
    expect(delivery.status).toBe("failed");
    expect(delivery.attempts[0].error).toMatch(/DNS lookup of no-such-host.invalid failed/);
  });

  it("waits as long as a 429's Retry-After asks when that is longer than the backoff", async () => {
    const s = await scenario();
    receiver.on(s.path, (_r, i) => (i === 0 ? { status: 429, headers: { "retry-after": "2" } } : {}));
    await emit(decided(s));
    const requests = await receiver.waitFor(2, { path: s.path });
    const gap = (requests[1]?.at ?? 0) - (requests[0]?.at ?? 0);
    expect(gap).toBeGreaterThanOrEqual(2000 - 20);
    expect(gap).toBeLessThan(2000 + 600);
    const [delivery] = await settled(s.tenantId);
    expect(delivery.attempts.map((a: Delivery) => a.statusCode)).toEqual([429, 200]);
  });

  it("keeps the backoff when a 503's Retry-After asks for less", async () => {
    const s = await scenario();
    receiver.on(s.path, (_r, i) => (i === 0 ? { status: 503, headers: { "retry-after": "0" } } : {}));
    await emit(decided(s));
    const requests = await receiver.waitFor(2, { path: s.path });
    const gap = (requests[1]?.at ?? 0) - (requests[0]?.at ?? 0);
    expect(gap).toBeGreaterThanOrEqual(1000 - 20);
    expect(gap).toBeLessThan(1000 + 600);
  });

  it("signs attempts after a rotation with the new active secret and names it", async () => {
    const s = await scenario();
    const newSecret = "whsec_rotated_fedcba9876543210";
    let rotated!: () => void;
    const rotation = new Promise<void>((resolve) => {
      rotated = resolve;
    });
    receiver.on(s.path, async (_r, i) => {
      if (i > 0) return {};
      await rotation;
      return { status: 500 };
    });
    await emit(decided(s));
    await receiver.waitFor(1, { path: s.path });
    // The outgoing secret is kept by id; the new one becomes active.
    await configureWebhook(h.app, adminHeaders, s.tenantId, {
      url: receiver.url(s.path),
      secrets: [{ id: "s1" }, { id: "s2", secret: newSecret }],
      activeSecretId: "s2",
    });
    rotated();
    const [before, after] = await receiver.waitFor(2, { path: s.path });
    if (!before || !after) throw new Error("expected two requests");
    expect(before.headers["x-service-secret-id"]).toBe("s1");
    expect(before.headers["x-service-signature"]).toBe(hmacHex(TEST_WEBHOOK_SECRET, before.body));
    expect(after.headers["x-service-secret-id"]).toBe("s2");
    expect(after.headers["x-service-signature"]).toBe(hmacHex(newSecret, after.body));
    expect(after.body.equals(before.body)).toBe(true);
    const rotationSet = { s1: TEST_WEBHOOK_SECRET, s2: newSecret };
    expect(verifyWebhook({ body: after.body, headers: after.headers, secrets: rotationSet })).toBe(true);
    expect(
      verifyWebhook({ body: after.body, headers: after.headers, secrets: { s1: TEST_WEBHOOK_SECRET } }),
    ).toBe(false);
    const [delivery] = await settled(s.tenantId);
    expect(delivery.attempts.map((a: Delivery) => a.secretId)).toEqual(["s1", "s2"]);
  });

  it("sends no X-Service-Secret-ID when the one secret has no id", async () => {
    const s = await scenario({ secrets: [{ secret: TEST_WEBHOOK_SECRET }] });
    await emit(decided(s));
    const [request] = await receiver.waitFor(1, { path: s.path });
    expect(request?.headers["x-service-secret-id"]).toBeUndefined();
    expect(request?.headers["x-service-signature"]).toBe(hmacHex(TEST_WEBHOOK_SECRET, request?.body ?? ""));
  });
});

describe("isolation", () => {
  /*
   * A tenant whose endpoint hangs holds its own lane and nothing more. Its attempts are told to
   * wait 30 s, far longer than this test needs on any machine, and the receiver never answers
   * them; while every one of them is still open, another tenant's decisions are all delivered,
   * and no further attempt reaches the hanging endpoint. Nothing here is timed: the conditions
   * are what the receiver holds when the healthy tenant's last delivery arrives.
   */
  it("an endpoint that hangs holds only its own lane: another tenant's decisions all arrive while its attempts are still open", async () => {
    const hanging = await scenario({ timeoutMs: 30_000, maxAttempts: 1 });
    receiver.on(hanging.path, { stall: true });
    const lane = h.ctx.config.webhookEndpointConcurrency;
    // More pending deliveries than the whole service's concurrency, all for the hanging endpoint.
    await h.ctx.db.transaction(async (tx) => {
      for (let i = 0; i < h.ctx.config.webhookConcurrency * 2; i++) await emitEvent(tx, decided(hanging));
    });
    await receiver.waitFor(lane, { path: hanging.path });

    const healthy = await scenario();
    const count = 50;
    for (let i = 0; i < count; i++) await emit(decided(healthy));
    await receiver.waitFor(count, { path: healthy.path, timeoutMs: 25_000 });

    const held = receiver.received(hanging.path);
    expect(held).toHaveLength(lane);
    // Every hanging attempt is still open: none has been given up on, so the healthy tenant's
    // deliveries went past them rather than through slots they had left.
    expect(receiver.open(hanging.path)).toBe(lane);
    const deliveries = await settled(healthy.tenantId, count, 20_000, "?limit=100");
    expect(deliveries.every((d: Delivery) => d.status === "succeeded" && d.attemptCount === 1)).toBe(true);
  });
});

describe("deliveries handed to the inserting process's worker", () => {
  // A claim row is deleted with its last outcome: a trigger keeps the deliveries every claim held.
  beforeAll(async () => {
    const db = h.ctx.db.root;
    await sql`CREATE TABLE test_claimed (delivery_id uuid NOT NULL)`.execute(db);
    await sql`CREATE FUNCTION test_note_claim() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO test_claimed SELECT unnest(NEW.deliveries); RETURN NEW; END $$`.execute(db);
    await sql`CREATE TRIGGER test_note_claim AFTER INSERT ON webhook_claims
      FOR EACH ROW EXECUTE FUNCTION test_note_claim()`.execute(db);
  });

  async function claimed(deliveryIds: string[]): Promise<string[]> {
    const { rows } = await sql<{ delivery_id: string }>`
      SELECT delivery_id FROM test_claimed WHERE delivery_id = ANY(${deliveryIds}::uuid[])`.execute(
      h.ctx.db.root,
    );
    return rows.map((r) => r.delivery_id);
  }

  it("sends the first attempt of a delivery this process inserted with no claim, and logs it as any attempt", async () => {
    const s = await scenario();
    receiver.on(s.path, { status: 204 });
    await emit(decided(s));
    const [delivery] = await settled(s.tenantId);
    expect(delivery).toMatchObject({ status: "succeeded", attemptCount: 1 });
    expect(delivery.attempts.map((a: Delivery) => [a.attempt, a.statusCode, a.error])).toEqual([
      [1, 204, null],
    ]);
    expect(receiver.received(s.path)).toHaveLength(1);
    expect(await claimed([delivery.deliveryId])).toEqual([]);
  });

  it("hands a retry's later attempts to claims like any delivery's", async () => {
    const s = await scenario({ maxAttempts: 2 });
    receiver.on(s.path, { status: 500 });
    await emit(decided(s));
    const [delivery] = await settled(s.tenantId);
    expect(delivery).toMatchObject({ status: "failed", attemptCount: 2 });
    expect(await claimed([delivery.deliveryId])).toEqual([delivery.deliveryId]);
  });

  /*
   * A stalled endpoint's lane takes no more handed deliveries than it has room for: the rest of
   * its backlog waits in the table, passed over by claims. Another tenant's deliveries all arrive
   * while every hanging attempt is still open. (Whether they are handed or claimed depends on how
   * quickly the receiver answers them: a lane without a quick answer for 300 ms takes no hand-off.)
   */
  it("a stalled endpoint's handed deliveries take its lane's room only, and do not hold another tenant's", async () => {
    const hanging = await scenario({ timeoutMs: 30_000, maxAttempts: 1 });
    receiver.on(hanging.path, { stall: true });
    const lane = h.ctx.config.webhookEndpointConcurrency;
    await h.ctx.db.transaction(async (tx) => {
      for (let i = 0; i < h.ctx.config.webhookConcurrency * 2; i++) await emitEvent(tx, decided(hanging));
    });
    await receiver.waitFor(lane, { path: hanging.path });
    const { rows } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM webhook_deliveries
      WHERE tenant_id = ${hanging.tenantId} AND claims = 0 AND handed_until IS NOT NULL`.execute(
      h.ctx.db.root,
    );
    expect(rows[0]?.n).toBe(lane);

    const healthy = await scenario();
    const count = 30;
    for (let i = 0; i < count; i++) await emit(decided(healthy));
    await receiver.waitFor(count, { path: healthy.path, timeoutMs: 25_000 });
    expect(receiver.open(hanging.path)).toBe(lane);
    expect(receiver.received(hanging.path)).toHaveLength(lane);
    const delivered = await settled(healthy.tenantId, count, 20_000, "?limit=100");
    expect(delivered.every((d: Delivery) => d.status === "succeeded" && d.attemptCount === 1)).toBe(true);
  });
});
