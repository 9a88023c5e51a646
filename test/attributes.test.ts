import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "./support/app.js";
import { createPartner, type Partner } from "./support/fixtures.js";
import { securityTests } from "./support/security.js";

let h: TestApp;
beforeAll(async () => {
  h = await createTestApp();
});
afterAll(async () => {
  await h.close();
});

function setAttributes(partner: Partner, body: unknown) {
  return h.app.inject({
    method: "POST",
    url: "/customer-attributes",
    headers: partner.headers,
    payload: body as never,
  });
}

describe("POST /customer-attributes", () => {
  securityTests(() => h, {
    scope: "attributes:write",
    ownsResource: false,
    async request() {
      return {
        method: "POST",
        url: "/customer-attributes",
        payload: { externalCustomerId: "c1", attributes: { a: 1 } },
      };
    },
  });

  it("merges attributes, a null removing one, and answers with the whole set", async () => {
    const partner = await createPartner(h.app);
    const first = await setAttributes(partner, {
      externalCustomerId: "c1",
      attributes: { risk: "high", score: 7, pep: false },
    });
    expect(first.statusCode).toBe(200);
    expect(first.json()).toEqual({
      externalCustomerId: "c1",
      attributes: { risk: "high", score: 7, pep: false },
      updatedAt: expect.any(String),
    });
    const second = await setAttributes(partner, {
      externalCustomerId: "c1",
      attributes: { risk: "low", pep: null, tier: "gold" },
    });
    expect(second.json().attributes).toEqual({ risk: "low", score: 7, tier: "gold" });
    expect(new Date(second.json().updatedAt).getTime()).toBeGreaterThanOrEqual(
      new Date(first.json().updatedAt).getTime(),
    );
  });

  it("keeps each tenant's customers apart and ignores a tenantId in the body", async () => {
    const a = await createPartner(h.app);
    const b = await createPartner(h.app);
    await setAttributes(a, { externalCustomerId: "same", attributes: { owner: "a" } });
    const res = await setAttributes(b, {
      externalCustomerId: "same",
      attributes: { other: 1 },
      tenantId: a.tenantId,
    });
    expect(res.json().attributes).toEqual({ other: 1 });
    const again = await setAttributes(a, { externalCustomerId: "same", attributes: {} });
    expect(again.json().attributes).toEqual({ owner: "a" });
  });

  it("keeps both of two concurrent merges of different attributes", async () => {
    const partner = await createPartner(h.app);
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        setAttributes(partner, { externalCustomerId: "c2", attributes: { [`a${i}`]: i } }),
      ),
    );
    const res = await setAttributes(partner, { externalCustomerId: "c2", attributes: {} });
    expect(Object.keys(res.json().attributes)).toHaveLength(10);
  });

  it("answers 400 naming the attribute for objects, arrays, bad names and oversize values", async () => {
    const partner = await createPartner(h.app);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ nested: { a: 1 } }, "nested"],
      [{ list: [1] }, "list"],
      [{ "bad-name": 1 }, "bad-name"],
      [{ "1st": 1 }, "1st"],
      [{ long: "x".repeat(1025) }, "long"],
    ];
    for (const [attributes, name] of cases) {
      const res = await setAttributes(partner, { externalCustomerId: "c3", attributes });
      expect(res.statusCode, name).toBe(400);
      expect(res.json().error, name).toMatch(name);
    }
    expect(
      (await setAttributes(partner, { externalCustomerId: "c3", attributes: { ok: "x".repeat(1024) } }))
        .statusCode,
    ).toBe(200);
    expect((await setAttributes(partner, { attributes: { a: 1 } })).statusCode).toBe(400);
    expect((await setAttributes(partner, { externalCustomerId: "", attributes: { a: 1 } })).statusCode).toBe(
      400,
    );
  });

  it("allows 200 attributes per customer and refuses a merge that would leave 201", async () => {
    const partner = await createPartner(h.app);
    const many = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`k${i}`, i]));
    expect((await setAttributes(partner, { externalCustomerId: "c4", attributes: many })).statusCode).toBe(
      200,
    );
    const over = await setAttributes(partner, { externalCustomerId: "c4", attributes: { extra: 1 } });
    expect(over.statusCode).toBe(400);
    const swap = await setAttributes(partner, {
      externalCustomerId: "c4",
      attributes: { k0: null, extra: 1 },
    });
    expect(swap.statusCode).toBe(200);
    expect(Object.keys(swap.json().attributes)).toHaveLength(200);
    const tooMany = Object.fromEntries(Array.from({ length: 201 }, (_, i) => [`n${i}`, i]));
    expect((await setAttributes(partner, { externalCustomerId: "c5", attributes: tooMany })).statusCode).toBe(
      400,
    );
  });
});
