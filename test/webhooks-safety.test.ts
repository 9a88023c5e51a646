import { describe, expect, it } from "vitest";
import { backoffMs, retryDelayMs } from "../src/modules/webhooks/delivery-attempt.js";
import { DeliveryGate } from "../src/modules/webhooks/delivery-gate.js";
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
    setTimeout(() => first.release(5), 20);
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
