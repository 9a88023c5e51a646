import { setTimeout as delay } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "./support/app.js";
import { adminHeaders, createStoredCase, createTenant } from "./support/fixtures.js";
import { sample } from "./support/metrics.js";
import { configureWebhook, emitDecided, emitDecidedAll, Receiver } from "./support/receiver.js";

// A file of its own: the claims counter is the process's, and no other delivery worker may claim
// beside this one. The worker polls once a minute, so that a claim in this test is one a
// delivery caused.
const METRICS_TOKEN = "metrics-token-0123456789";

let h: TestApp;
let receiver: Receiver;
beforeAll(async () => {
  h = await createTestApp({ metricsToken: METRICS_TOKEN, jobPollMs: 60_000 });
  receiver = await Receiver.start();
  await h.startWorker();
});
afterAll(async () => {
  await h.close();
  await receiver.close();
});

async function claims(): Promise<{ took: number; empty: number }> {
  const res = await h.app.inject({ url: "/metrics", headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  expect(res.statusCode).toBe(200);
  return {
    took: sample(res.body, "cds_webhook_claims_total", { outcome: "took" }) ?? 0,
    empty: sample(res.body, "cds_webhook_claims_total", { outcome: "empty" }) ?? 0,
  };
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`still waiting for ${what}: ${JSON.stringify(value)}`);
    await delay(20);
  }
}

describe("the delivery worker's claims (decision 0031)", () => {
  it("delivers deliveries handed to it without a claim, and a slot they free claims nothing", async () => {
    // The worker's first claim, when it starts, finds nothing.
    const before = await until(claims, (c) => c.empty >= 1, "the worker's first claim");
    const tenantId = await createTenant(h.app);
    await configureWebhook(h.app, adminHeaders, tenantId, { url: receiver.url("/hook") });
    receiver.on("/hook", { status: 204 });
    const count = 20;
    for (let i = 0; i < count; i++) {
      const caseId = await createStoredCase(h.ctx, tenantId);
      await emitDecided(h.ctx.db, tenantId, caseId);
      // One at a time: each goes to a free slot of a lane with room, so each is handed.
      await until(
        async () => receiver.received("/hook").length,
        (n) => n === i + 1,
        `delivery ${i + 1}`,
      );
    }
    // Every outcome recorded: every slot has freed, and any claim a freed slot made is done.
    await until(
      async () => {
        const res = await h.app.inject({
          url: `/admin/tenants/${tenantId}/webhook-deliveries`,
          headers: adminHeaders,
        });
        return res.json().deliveries as Array<{ status: string }>;
      },
      (list) => list.length === count && list.every((d) => d.status === "succeeded"),
      "the outcomes",
    );
    expect(await claims()).toEqual(before);
  });

  it("sends a burst of one endpoint's events, more than its lane's floor, without a claim", async () => {
    const before = await claims();
    const tenantId = await createTenant(h.app);
    await configureWebhook(h.app, adminHeaders, tenantId, { url: receiver.url("/burst") });
    receiver.on("/burst", { status: 204 });
    // 40 events in one transaction, as one engine batch writes them: more than the floor (16) of
    // the endpoint's lane. A lane that answered quickly a moment ago lets the rest wait for its
    // slots instead of going to the table for a claim.
    const count = 40;
    const caseIds: string[] = [];
    for (let i = 0; i < count; i++) caseIds.push(await createStoredCase(h.ctx, tenantId));
    await emitDecided(h.ctx.db, tenantId, await createStoredCase(h.ctx, tenantId));
    await until(
      async () => receiver.received("/burst").length,
      (n) => n === 1,
      "the first delivery",
    );
    await emitDecidedAll(h.ctx.db, tenantId, caseIds);
    const rows = await until(
      () =>
        h.ctx.db.root
          .selectFrom("webhook_deliveries")
          .select(["status", "claims"])
          .where("tenant_id", "=", tenantId)
          .execute(),
      (list) => list.length === count + 1 && list.every((d) => d.status === "succeeded"),
      "the outcomes",
    );
    expect(receiver.received("/burst")).toHaveLength(count + 1);
    // A waiter that found no slot within the lane's stall time (a very slow machine) is deferred,
    // and its next attempt is claimed: those are the only claims this burst may cost.
    const deferred = rows.filter((d) => d.claims > 1).length;
    const after = await claims();
    expect(after.took - before.took).toBeLessThanOrEqual(deferred);
  });

  // The embedded database is one process's: its worker is the only one, and wakes nobody else.
  it.skipIf(Boolean(process.env.DATABASE_URL))(
    "on the embedded database, a full lane's new deliveries wake no claim; they are claimed when it has room",
    async () => {
      const before = await claims();
      const tenantId = await createTenant(h.app);
      await configureWebhook(h.app, adminHeaders, tenantId, { url: receiver.url("/held") });
      let release = () => {};
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      receiver.on("/held", () => released.then(() => ({ status: 204 })));
      // 46 events in one transaction: the lane's floor (16) is handed over and held by the
      // receiver; the other 30 are left in the table for this worker to claim when the lane has room.
      const count = 46;
      const caseIds: string[] = [];
      for (let i = 0; i < count; i++) caseIds.push(await createStoredCase(h.ctx, tenantId));
      await emitDecidedAll(h.ctx.db, tenantId, caseIds);
      await receiver.waitUntil(() => receiver.open("/held") === 16, { what: "16 held attempts" });

      // A redelivery (inserted for any worker's claim, with a wake-up) of another tenant's event:
      // once it arrives, every claim a wake-up before it asked for has been made.
      const other = await createTenant(h.app);
      await configureWebhook(h.app, adminHeaders, other, { url: receiver.url("/other") });
      receiver.on("/other", { status: 204 });
      await emitDecided(h.ctx.db, other, await createStoredCase(h.ctx, other));
      await receiver.waitFor(1, { path: "/other" });
      const [first] = await until(
        async () => {
          const res = await h.app.inject({
            url: `/admin/tenants/${other}/webhook-deliveries`,
            headers: adminHeaders,
          });
          return res.json().deliveries as Array<{ deliveryId: string; status: string }>;
        },
        (list) => list[0]?.status === "succeeded",
        "the other tenant's delivery",
      );
      const redelivered = await h.app.inject({
        method: "POST",
        url: `/admin/webhook-deliveries/${first?.deliveryId}/redeliver`,
        headers: adminHeaders,
      });
      expect(redelivered.statusCode).toBe(202);
      await receiver.waitFor(2, { path: "/other" });
      // Only the redelivery's claim: none for the held lane's deliveries, which it would pass over.
      const meanwhile = await claims();
      expect(meanwhile.empty).toBe(before.empty);

      release();
      await until(
        () =>
          h.ctx.db.root
            .selectFrom("webhook_deliveries")
            .select("status")
            .where("tenant_id", "=", tenantId)
            .execute(),
        (list) => list.length === count && list.every((d) => d.status === "succeeded"),
        "the held lane's deliveries",
      );
      expect(receiver.received("/held")).toHaveLength(count);
    },
  );
});
