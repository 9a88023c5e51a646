import { setTimeout as delay } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "./support/app.js";
import { adminHeaders, createStoredCase, createTenant } from "./support/fixtures.js";
import { sample } from "./support/metrics.js";
import { configureWebhook, emitDecided, Receiver } from "./support/receiver.js";

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
});
