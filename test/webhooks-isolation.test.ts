import { afterAll, beforeAll, expect, it } from "vitest";
import { emitEvent } from "../src/modules/webhooks/events.js";
import { createTestApp, type TestApp } from "./support/app.js";
import { SERVER_URL } from "./support/db.js";
import { adminHeaders, createStoredCase, createTenant } from "./support/fixtures.js";
import { configureWebhook, type ReceivedRequest, Receiver, type WebhookSetup } from "./support/receiver.js";

/**
 * A tenant whose endpoint hangs past its timeout must not slow another tenant's deliveries: the
 * healthy tenant's p99 from decision (the commit of its `case.decided`) to delivery, with the
 * hanging tenant's traffic running, stays under twice its p99 without it, measured in this run.
 */

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

interface Tenant {
  tenantId: string;
  caseId: string;
  path: string;
}

let paths = 0;
async function tenant(setup: Partial<WebhookSetup> = {}): Promise<Tenant> {
  const tenantId = await createTenant(h.app);
  const caseId = await createStoredCase(h.ctx, tenantId);
  const path = `/isolation/${++paths}`;
  await configureWebhook(h.app, adminHeaders, tenantId, { url: receiver.url(path), ...setup });
  return { tenantId, caseId, path };
}

let sequence = 0;
/** One decision of the tenant, in a transaction of its own; resolves to its number and commit time. */
async function decide(t: Tenant): Promise<{ n: number; committedAt: number }> {
  const n = ++sequence;
  await h.ctx.db.transaction((tx) =>
    emitEvent(tx, {
      tenantId: t.tenantId,
      caseId: t.caseId,
      type: "case.decided",
      webhookKey: null,
      dryRun: false,
      payload: { event_type: "case.decided", case_id: t.caseId, tenant_id: t.tenantId, sequence: n },
    }),
  );
  return { n, committedAt: performance.timeOrigin + performance.now() };
}

const p99 = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)] as number;
};

/** `count` decisions of the tenant, `concurrent` at a time; decision → first arrival of each. */
async function latencies(t: Tenant, count: number, during?: () => Promise<unknown>): Promise<number[]> {
  const committed: Array<{ n: number; committedAt: number }> = [];
  const concurrent = 4;
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrent }, async () => {
      while (next < count) {
        next++;
        committed.push(await decide(t));
        if (during) await during();
      }
    }),
  );
  // First arrival of each decision, read once per request received (the check runs on each).
  const at = new Map<number, number>();
  let read = 0;
  const arrived = () => {
    const requests = receiver.received(t.path);
    for (; read < requests.length; read++) {
      const r = requests[read] as ReceivedRequest;
      const n = r.json().sequence as number;
      if (!at.has(n)) at.set(n, r.at);
    }
    return committed.every((c) => at.has(c.n));
  };
  await receiver.waitUntil(arrived, { timeoutMs: 60_000, what: "every decision of the healthy tenant" });
  return committed.map((c) => (at.get(c.n) as number) - c.committedAt);
}

/** A companion tenant's backlog, then its traffic beside the healthy tenant's: the healthy one's latencies. */
async function beside(healthy: Tenant, companion: Tenant): Promise<number[]> {
  const backlog = h.ctx.config.webhookConcurrency * 2;
  await h.ctx.db.transaction(async (tx) => {
    for (let i = 0; i < backlog; i++) {
      await emitEvent(tx, {
        tenantId: companion.tenantId,
        caseId: companion.caseId,
        type: "case.decided",
        webhookKey: null,
        dryRun: false,
        payload: {
          event_type: "case.decided",
          case_id: companion.caseId,
          tenant_id: companion.tenantId,
          sequence: -1,
        },
      });
    }
  });
  await receiver.waitFor(h.ctx.config.webhookEndpointConcurrency, { path: companion.path });
  return latencies(healthy, 300, () => decide(companion));
}

// On the embedded database (one connection, in this process) the hanging tenant's pending backlog,
// passed over by every claim, still costs the healthy tenant: its p99 there is about 4.5 times
// (issue 20 remains open for it). On PostgreSQL the bound holds.
it.skipIf(!SERVER_URL)(
  "a tenant whose endpoint hangs past its timeout leaves another tenant's p99 decision → delivery under twice what it is without it",
  async () => {
    const healthy = await tenant();
    // The same traffic in both rounds; only the companion's endpoint differs: one answers at once,
    // the other after its timeout, so every attempt holds a slot for the whole timeout, then fails.
    const quick = await tenant();
    const hanging = await tenant({ timeoutMs: 1000, maxAttempts: 3 });
    receiver.on(hanging.path, { delayMs: 1500 });

    // Warm-up: connections, compiled statements.
    await latencies(healthy, 50);
    const without = p99(await beside(healthy, quick));
    const withHanging = p99(await beside(healthy, hanging));
    process.stdout.write(
      `isolation: healthy tenant's p99 ${without.toFixed(1)} ms beside a quick tenant, ${withHanging.toFixed(1)} ms beside ` +
        `the hanging one (${receiver.received(hanging.path).length} hanging attempts)\n`,
    );
    // The hanging endpoint was really attempted, and held to its lane.
    expect(receiver.received(hanging.path).length).toBeGreaterThanOrEqual(
      h.ctx.config.webhookEndpointConcurrency,
    );
    expect(withHanging).toBeLessThan(2 * without);
  },
  180_000,
);
