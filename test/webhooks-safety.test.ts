import { describe, expect, it } from "vitest";
import { answerOf, backoffMs, retryDelayMs } from "../src/modules/webhooks/delivery-attempt.js";
import { DeliveryGate, type Slot } from "../src/modules/webhooks/delivery-gate.js";
import { parseRetryAfter } from "../src/modules/webhooks/http-sender.js";
import { isPrivateAddress } from "../src/modules/webhooks/target-safety.js";

describe("isPrivateAddress", () => {
  it("refuses every non-public range, IPv4-mapped and NAT64 forms included", () => {
    const refused = [
      "127.0.0.1",
      "10.0.0.1",
      "172.16.0.1",
      "172.31.255.255",
      "192.168.0.1",
      "169.254.169.254",
      "100.64.0.1",
      "100.100.100.200",
      "0.0.0.0",
      "224.0.0.1",
      "255.255.255.255",
      "::1",
      "::",
      "fd00:ec2::254",
      "fc00::1",
      "fe80::1",
      "ff02::1",
      "::ffff:127.0.0.1",
      "::ffff:a9fe:a9fe",
      "64:ff9b::a9fe:a9fe",
      "not an address",
    ];
    for (const address of refused) expect(isPrivateAddress(address), address).toBe(true);
  });

  it("allows public addresses", () => {
    for (const address of [
      "93.184.215.14",
      "8.8.8.8",
      "172.32.0.1",
      "2606:4700:4700::1111",
      "64:ff9b::808:808",
    ]) {
      expect(isPrivateAddress(address), address).toBe(false);
    }
  });
});

describe("retry timing", () => {
  it("waits 1 s, 2 s, 4 s, 8 s after attempts 1 to 4", () => {
    expect([1, 2, 3, 4].map(backoffMs)).toEqual([1000, 2000, 4000, 8000]);
  });

  it("honours a longer Retry-After up to 10 minutes, never a shorter one", () => {
    expect(retryDelayMs(1, 5000)).toBe(5000);
    expect(retryDelayMs(3, 1000)).toBe(4000);
    expect(retryDelayMs(1, 3_600_000)).toBe(600_000);
    expect(parseRetryAfter("7")).toBe(7000);
    expect(
      parseRetryAfter("Wed, 21 Oct 2015 07:28:10 GMT", Date.parse("Wed, 21 Oct 2015 07:28:00 GMT")),
    ).toBe(10_000);
    expect(parseRetryAfter("soon")).toBeNull();
    expect(parseRetryAfter(undefined)).toBeNull();
  });
});

describe("DeliveryGate", () => {
  it("lets at most the bound in flight per endpoint, and other endpoints through", async () => {
    const gate = new DeliveryGate({ perEndpoint: 2, stallMs: 50 });
    const a1 = await gate.enter("t1", "default");
    const a2 = await gate.enter("t1", "default");
    expect("release" in a1 && "release" in a2).toBe(true);
    const other = await gate.enter("t2", "default");
    expect("release" in other).toBe(true);
    expect(gate.inFlight("t1", "default")).toBe(2);
  });

  it("hands a slot freed by a quick answer to an attempt waiting for it", async () => {
    const gate = new DeliveryGate({ perEndpoint: 1, stallMs: 200 });
    const first = await gate.enter("t", "default");
    if (!("release" in first)) throw new Error("expected a slot");
    const waiting = gate.enter("t", "default");
    setTimeout(() => first.release(5, "ok"), 20);
    const second = await waiting;
    expect("release" in second).toBe(true);
    expect(gate.inFlight("t", "default")).toBe(1);
  });

  it("defers at once the attempts of an endpoint that has not answered for longer than stallMs", async () => {
    let now = 0;
    const gate = new DeliveryGate({ perEndpoint: 1, stallMs: 100, now: () => now });
    const stuck = await gate.enter("t", "default");
    expect("release" in stuck).toBe(true);
    now = 5000;
    const started = Date.now();
    const deferred = await gate.enter("t", "default");
    expect(Date.now() - started).toBeLessThan(50);
    if (!("deferMs" in deferred)) throw new Error("expected a deferral");
    // About as long as the stall has lasted, with jitter.
    expect(deferred.deferMs).toBeGreaterThanOrEqual(3750);
    expect(deferred.deferMs).toBeLessThanOrEqual(6250);
  });
});

/** A slot of the endpoint's lane, which must be free now (no wait). */
async function slotOf(gate: DeliveryGate, tenantId = "t"): Promise<Slot> {
  const entry = await gate.enter(tenantId, "default");
  if (!("release" in entry)) throw new Error(`expected a slot, got a deferral of ${entry.deferMs} ms`);
  return entry;
}

/** Fills the lane to its cap, then answers one attempt quickly and well: the cap grows by one each time. */
async function growTo(gate: DeliveryGate, slots: Slot[], cap: number): Promise<void> {
  while (gate.cap("t", "default") < cap) {
    while (gate.room("t", "default") > 0) slots.push(await slotOf(gate));
    slots.shift()?.release(5, "ok");
  }
  while (gate.room("t", "default") > 0) slots.push(await slotOf(gate));
}

describe("DeliveryGate's adaptive lanes", () => {
  it("accepts what it would let in or let wait: a quick lane's room and waiters, a slow one's room, none while stalled", async () => {
    let now = 0;
    const gate = new DeliveryGate({ perEndpoint: 2, stallMs: 300, now: () => now });
    // An endpoint without a lane: its floor, as a claim would take.
    expect(gate.accepts("t", "default")).toBe(2);
    const slots = [await slotOf(gate), await slotOf(gate)];
    // Full but quick (the first guess of its latency is): four waiters a slot.
    expect(gate.accepts("t", "default")).toBe(8);
    const waiting = gate.enter("t", "default");
    expect(gate.accepts("t", "default")).toBe(7);
    // No quick answer for longer than the stall: it takes nothing more, and its waiter is deferred.
    now = 400;
    expect(gate.accepts("t", "default")).toBe(0);
    expect("deferMs" in (await waiting)).toBe(true);
    // Answers that took a second: a slow lane, remembered, that takes its room and no waiters.
    for (const slot of slots) slot.release(1000, "ok");
    expect(gate.cap("t", "default")).toBe(2);
    expect(gate.accepts("t", "default")).toBe(2);
    // A quick lane back at its floor is kept for a moment, then forgotten.
    const quick = await slotOf(gate, "q");
    quick.release(5, "ok");
    expect(gate.accepts("q", "default")).toBe(2 + 8);
    now += 1000;
    expect(gate.accepts("q", "default")).toBe(2);
  });

  it("grows a lane by one per quick success at its cap, up to the ceiling and never beyond", async () => {
    let now = 0;
    const gate = new DeliveryGate({ perEndpoint: 2, maxPerEndpoint: 5, stallMs: 100, now: () => now });
    const slots = [await slotOf(gate), await slotOf(gate)];
    expect(gate.room("t", "default")).toBe(0);
    expect(gate.full()).toEqual([{ tenantId: "t", webhookKey: "default" }]);
    // At its cap, a quick 2xx makes room for one more than before.
    slots.shift()?.release(5, "ok");
    expect(gate.cap("t", "default")).toBe(3);
    expect(gate.room("t", "default")).toBe(2);
    // Below its cap, a quick 2xx teaches nothing: the lane did not use what it had.
    slots.push(await slotOf(gate));
    slots.shift()?.release(5, "ok");
    expect(gate.cap("t", "default")).toBe(3);
    expect(gate.inFlight("t", "default")).toBe(1);

    await growTo(gate, slots, 5);
    expect(gate.inFlight("t", "default")).toBe(5);
    // At the ceiling, quick answers keep it there, each freed slot going to the next attempt.
    for (let i = 0; i < 10; i++) {
      now += 10;
      slots.shift()?.release(5, "ok");
      expect(gate.cap("t", "default")).toBe(5);
      slots.push(await slotOf(gate));
      expect(gate.room("t", "default")).toBe(0);
    }
    expect(gate.inFlight("t", "default")).toBe(5);
    expect(gate.full()).toEqual([{ tenantId: "t", webhookKey: "default" }]);
    // Another endpoint starts at the floor.
    expect(gate.room("t2", "default")).toBe(2);
  });

  it("grows a lane when attempts wait for it, and hands the new slot to one of them", async () => {
    const gate = new DeliveryGate({ perEndpoint: 1, maxPerEndpoint: 4, stallMs: 60_000 });
    const first = await slotOf(gate);
    const waiting = [gate.enter("t", "default"), gate.enter("t", "default")];
    first.release(5, "ok");
    // The freed slot and the one the cap grew by: both waiting attempts go.
    const entries = await Promise.all(waiting);
    expect(entries.every((e) => "release" in e)).toBe(true);
    expect(gate.cap("t", "default")).toBe(2);
    expect(gate.inFlight("t", "default")).toBe(2);
  });

  it("halves a lane's cap on a 5xx, a 429, a timeout or a slow answer, never below the floor; another 4xx leaves it", async () => {
    const gate = new DeliveryGate({ perEndpoint: 2, maxPerEndpoint: 16, stallMs: 100, now: () => 0 });
    const slots: Slot[] = [];
    await growTo(gate, slots, 16);
    const cap = () => gate.cap("t", "default");

    slots.shift()?.release(5, answerOf({ ok: false, statusCode: 404 }));
    expect(cap()).toBe(16);
    slots.shift()?.release(5, answerOf({ ok: false, statusCode: 503 }));
    expect(cap()).toBe(8);
    // More in flight than the new cap: no room until enough have ended.
    expect(gate.inFlight("t", "default")).toBe(14);
    expect(gate.room("t", "default")).toBe(0);
    expect(gate.full()).toEqual([{ tenantId: "t", webhookKey: "default" }]);
    slots.shift()?.release(5, answerOf({ ok: false, statusCode: 429 }));
    expect(cap()).toBe(4);
    // A success that took the stall threshold or longer says the endpoint is slow.
    slots.shift()?.release(100, "ok");
    expect(cap()).toBe(2);
    slots.shift()?.release(10_000, answerOf({ ok: false, statusCode: null }));
    expect(cap()).toBe(2);
    while (slots.length > 0) slots.shift()?.release(5, answerOf({ ok: false, statusCode: 500 }));
    expect(cap()).toBe(2);
  });

  it("classifies an attempt's answer for its lane: 2xx ok; 5xx, 429 and no answer overloaded; 3xx and other 4xx neither", () => {
    expect(answerOf({ ok: true, statusCode: 204 })).toBe("ok");
    for (const statusCode of [500, 502, 503, 504, 429, null]) {
      expect(answerOf({ ok: false, statusCode }), String(statusCode)).toBe("overloaded");
    }
    for (const statusCode of [302, 400, 401, 404, 410]) {
      expect(answerOf({ ok: false, statusCode }), String(statusCode)).toBe("neither");
    }
  });

  it("a lane that grew and then stalls takes no more, and falls back to the floor as its attempts time out", async () => {
    let now = 0;
    const gate = new DeliveryGate({ perEndpoint: 2, maxPerEndpoint: 8, stallMs: 100, now: () => now });
    const slots: Slot[] = [];
    await growTo(gate, slots, 8);
    // One attempt ends, then nothing answers for longer than the stall threshold.
    slots.shift()?.release(5, "ok");
    expect(gate.room("t", "default")).toBe(1);
    now += 150;
    expect(gate.room("t", "default")).toBe(0);
    expect(gate.full()).toEqual([{ tenantId: "t", webhookKey: "default" }]);
    // Its attempts time out one after another.
    now += 10_000;
    const caps: number[] = [];
    while (slots.length > 0) {
      slots.shift()?.release(10_000, "overloaded");
      caps.push(gate.cap("t", "default"));
    }
    expect(caps).toEqual([4, 2, 2, 2, 2, 2, 2]);
    // Remembered as slow: its next burst gets the floor, and the attempt past it is deferred at once.
    expect(gate.room("t", "default")).toBe(2);
    await slotOf(gate);
    await slotOf(gate);
    now += 150;
    const deferred = await gate.enter("t", "default");
    expect("deferMs" in deferred).toBe(true);
  });

  it("an idle lane's cap halves for each second it stays idle, back to the floor", async () => {
    let now = 0;
    const gate = new DeliveryGate({ perEndpoint: 2, maxPerEndpoint: 8, stallMs: 100, now: () => now });
    const slots: Slot[] = [];
    await growTo(gate, slots, 8);
    while (slots.length > 0) slots.shift()?.release(5, "ok");
    expect(gate.inFlight("t", "default")).toBe(0);
    // A short gap keeps what it learned: the next batch gets the lane's width at once.
    now += 900;
    expect(gate.room("t", "default")).toBe(8);
    now += 100;
    expect(gate.cap("t", "default")).toBe(4);
    now += 1000;
    expect(gate.cap("t", "default")).toBe(2);
    now += 5000;
    expect(gate.room("t", "default")).toBe(2);
    expect(gate.full()).toEqual([]);
  });
});
