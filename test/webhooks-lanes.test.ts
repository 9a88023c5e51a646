import { setTimeout as delay } from "node:timers/promises";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emitEvent, emitEvents, type NewEvent } from "../src/modules/webhooks/events.js";
import { createTestApp, type TestApp } from "./support/app.js";
import { adminHeaders, createStoredCase, createTenant } from "./support/fixtures.js";
import { configureWebhook, Receiver, type Reply, type WebhookSetup } from "./support/receiver.js";

/*
 * Adaptive endpoint lanes (decision 0007), over the real app, database and delivery worker and a
 * real local receiver. The lanes here are narrow (a floor of 4 and a ceiling of 12, on a worker of
 * 32 slots) so that how wide a lane is shows at the receiver with a few hundred deliveries.
 */
const FLOOR = 4;
const CEILING = 12;
const WORKER_SLOTS = 32;

let h: TestApp;
let receiver: Receiver;

beforeAll(async () => {
  h = await createTestApp({
    webhookConcurrency: WORKER_SLOTS,
    webhookEndpointConcurrency: FLOOR,
    webhookEndpointConcurrencyMax: CEILING,
  });
  receiver = await Receiver.start();
  await h.startWorker();
});
afterAll(async () => {
  // First the receiver: the attempts it holds end at once instead of at the worker's stop timeout.
  await receiver.close();
  await h.close();
});

interface Scenario {
  tenantId: string;
  caseId: string;
  path: string;
}

let paths = 0;
async function scenario(setup: Partial<WebhookSetup> = {}): Promise<Scenario> {
  const tenantId = await createTenant(h.app);
  const caseId = await createStoredCase(h.ctx, tenantId);
  const path = `/lanes/${++paths}`;
  await configureWebhook(h.app, adminHeaders, tenantId, { url: receiver.url(path), ...setup });
  return { tenantId, caseId, path };
}

function decided(s: Scenario): NewEvent {
  return {
    tenantId: s.tenantId,
    caseId: s.caseId,
    type: "case.decided",
    webhookKey: null,
    dryRun: false,
    payload: {
      event_type: "case.decided",
      case_id: s.caseId,
      tenant_id: s.tenantId,
      result: { decision: { value: "approved", source: "workflow" } },
      timestamp: "2025-03-01T10:00:00.000Z",
    },
  };
}

/** A backlog for the endpoint: `count` deliveries inserted in one transaction. */
async function emitMany(s: Scenario, count: number): Promise<void> {
  await h.ctx.db.transaction((tx) =>
    emitEvents(
      tx,
      Array.from({ length: count }, () => decided(s)),
    ),
  );
}

async function statuses(tenantId: string): Promise<Record<string, number>> {
  const { rows } = await sql<{ status: string; n: number }>`
    SELECT status, count(*)::int AS n FROM webhook_deliveries WHERE tenant_id = ${tenantId}
    GROUP BY status`.execute(h.ctx.db.root);
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

async function until(condition: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await delay(50);
  }
}

/**
 * Quick 204s to a path, given in waves: a request is held until the lane's ceiling of them are
 * open at once, or until 100 ms after the first of its wave arrived (under the 300 ms that count
 * as quick), and then its whole wave is answered together. The lane's freed slots are taken again
 * together, so the next wave is as wide as the lane lets it be, and that width shows here.
 */
class Waves {
  /** The most requests the path has had open at once, as seen when each arrived. */
  maxOpen = 0;
  readonly #held: Array<() => void> = [];
  #timer: NodeJS.Timeout | undefined;

  constructor(readonly path: string) {}

  answer(): Promise<Reply> {
    const open = receiver.open(this.path);
    this.maxOpen = Math.max(this.maxOpen, open);
    const reply = new Promise<Reply>((resolve) => this.#held.push(() => resolve({ status: 204 })));
    if (open >= CEILING) this.#flush();
    else this.#timer ??= setTimeout(() => this.#flush(), 100);
    return reply;
  }

  #flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    for (const answer of this.#held.splice(0)) answer();
  }
}

describe("adaptive endpoint lanes", () => {
  it("an endpoint that answers quickly gets more than the floor in flight, up to the ceiling and never beyond", async () => {
    const s = await scenario({ maxAttempts: 1 });
    const waves = new Waves(s.path);
    receiver.on(s.path, () => waves.answer());
    const count = 300;
    await emitMany(s, count);
    await until(
      async () => (await statuses(s.tenantId)).succeeded === count,
      "every delivery succeeded",
      60_000,
    );
    expect(receiver.received(s.path)).toHaveLength(count);
    expect(waves.maxOpen).toBe(CEILING);
  }, 90_000);

  /*
   * The lane grows to its ceiling; then the endpoint answers 503 at once while a backlog keeps the
   * lane busy (an idle lane is forgotten, and starts from the floor anyway); then it hangs. The
   * failures have halved the lane back to its floor, so the hanging endpoint holds only the floor's
   * attempts: another tenant's decisions all arrive meanwhile, and no further attempt reaches it.
   */
  it("an endpoint that grew and then fails is brought back to the floor, and when it hangs holds only the floor", async () => {
    const s = await scenario({ maxAttempts: 1, timeoutMs: 30_000 });
    let mode: "quick" | "failing" | "hanging" = "quick";
    const waves = new Waves(s.path);
    receiver.on(s.path, (): Reply | Promise<Reply> => {
      if (mode === "quick") return waves.answer();
      if (mode === "failing") return { status: 503 };
      return { stall: true };
    });
    await emitMany(s, 200);
    await until(async () => waves.maxOpen >= CEILING, `${CEILING} requests open at once`);

    mode = "failing";
    // The requests that arrived before the switch are answered quickly (204), those after 503.
    const answeredQuickly = receiver.received(s.path).length;
    await emitMany(s, WORKER_SLOTS);
    // Once every quick answer's outcome is recorded, at most the worker's slots' worth of attempts
    // can have ended unrecorded: this many more failures recorded means that two at least ended
    // after the last quick answer, and each of them halved the lane.
    await until(
      async () => (await statuses(s.tenantId)).succeeded === answeredQuickly,
      "the quick answers' outcomes recorded",
    );
    const failedBefore = (await statuses(s.tenantId)).failed ?? 0;
    await emitMany(s, WORKER_SLOTS * 2);
    await until(
      async () => ((await statuses(s.tenantId)).failed ?? 0) >= failedBefore + WORKER_SLOTS + 2,
      "failures recorded after the last quick answer",
    );

    mode = "hanging";
    const hangingFrom = receiver.received(s.path).length;
    const hanging = () => receiver.received(s.path).slice(hangingFrom);
    await emitMany(s, 50);
    await receiver.waitUntil(() => hanging().filter((r) => r.open).length >= FLOOR, {
      what: `${FLOOR} hanging attempts`,
    });
    const healthy = await scenario();
    const count = 20;
    for (let i = 0; i < count; i++) await h.ctx.db.transaction((tx) => emitEvent(tx, decided(healthy)));
    await receiver.waitFor(count, { path: healthy.path, timeoutMs: 25_000 });
    expect(hanging()).toHaveLength(FLOOR);
    expect(hanging().filter((r) => r.open)).toHaveLength(FLOOR);
    expect(waves.maxOpen).toBe(CEILING);
  }, 90_000);
});
