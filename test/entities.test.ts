import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { entityKeysOf, getRelatedCases, normalizeValue } from "../src/modules/entities/index.js";
import { ADMIN_TOKEN, createTestApp, type TestApp } from "./support/app.js";
import { adminHeaders, createPartner, type Partner } from "./support/fixtures.js";
import { amountScreen, createWorkflow } from "./support/workflows.js";

let h: TestApp;
beforeAll(async () => {
  h = await createTestApp();
});
afterAll(async () => {
  await h.close();
});

async function partnerWithWorkflow(): Promise<Partner> {
  const partner = await createPartner(h.app);
  await createWorkflow(h.app, partner.tenantId, "screen", amountScreen);
  return partner;
}

async function submit(
  partner: Partner,
  subject: Record<string, unknown>,
  extra: Record<string, unknown> = {},
) {
  const res = await h.app.inject({
    method: "POST",
    url: "/cases",
    headers: partner.headers,
    payload: {
      workflowId: "screen",
      type: "Transaction",
      eventTimestamp: new Date().toISOString(),
      payload: { amount: 1 },
      subject,
      ...extra,
    },
  });
  // 200 only for a submission that met its idempotency key again.
  expect(extra.idempotencyKey ? [200, 201] : [201], res.body).toContain(res.statusCode);
  return res.json().caseId as string;
}

const payment = (iban: string, customer = "cust-1", device?: string) => ({
  transaction: {
    amount: 10,
    currency: "EUR",
    parties: [
      {
        role: "sender",
        identifiers: [
          { type: "external_customer_id", value: customer },
          ...(device ? [{ type: "device_id", value: device }] : []),
        ],
      },
      { role: "receiver", identifiers: [{ type: "iban", value: iban }] },
    ],
  },
});

function admin(url: string) {
  return h.app.inject({ method: "GET", url, headers: adminHeaders });
}

async function find(tenantId: string, type: string, value: string) {
  const query = new URLSearchParams({ type, value });
  const res = await admin(`/admin/tenants/${tenantId}/entities?${query}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().entities as Array<{ entityId: string; type: string; value: string; caseCount: number }>;
}

/** Every case of an entity, page by page of `limit` through the operator API, in the order listed. */
async function casesOf(tenantId: string, entityId: string | undefined, limit: number): Promise<string[]> {
  const listed: string[] = [];
  let cursor: string | null = null;
  do {
    const res = await admin(
      `/admin/tenants/${tenantId}/entities/${entityId}/cases?limit=${limit}${cursor ? `&cursor=${cursor}` : ""}`,
    );
    expect(res.statusCode, res.body).toBe(200);
    listed.push(...res.json().cases.map((c: { caseId: string }) => c.caseId));
    cursor = res.json().nextCursor;
  } while (cursor);
  return listed;
}

describe("normalisation", () => {
  it("trims every value, lower-cases e-mail, upper-cases IBANs without spaces, keeps + and digits of phones", () => {
    expect(normalizeValue("email", "  Ada.Lovelace@Example.COM ")).toBe("ada.lovelace@example.com");
    expect(normalizeValue("iban", " de89 3704 0044 0532 0130 00 ")).toBe("DE89370400440532013000");
    expect(normalizeValue("phone", "+44 (20) 7946-0958")).toBe("+442079460958");
    expect(normalizeValue("device_id", "  Dev-ABC  ")).toBe("Dev-ABC");
    expect(normalizeValue("customer", "\tcust-1\n")).toBe("cust-1");
    expect(normalizeValue("phone", " ( ) ")).toBe("");
  });

  it("takes every key of the subject once, with its role: subject for the person and business, the party's role for parties", () => {
    const keys = entityKeysOf(
      {
        person: {
          email: "ADA@example.com",
          phone: "+1 555 0100",
          identifiers: [
            { type: "external_customer_id", value: "cust-9" },
            { type: "national_id", value: "AB123" },
          ],
        },
        business: { registrationNumber: " 0123 ", identifiers: [{ type: "tax_id", value: "T-1" }] },
        transaction: {
          amount: 1,
          currency: "EUR",
          parties: [
            { role: "receiver", identifiers: [{ type: "iban", value: "gb82 west 1234 5698 7654 32" }] },
            { role: "sender", identifiers: [{ type: "email", value: "ada@EXAMPLE.com" }] },
          ],
        },
      },
      "cust-9",
    );
    expect(keys).toEqual([
      { type: "customer", value: "cust-9", role: "subject" },
      { type: "national_id", value: "AB123", role: "subject" },
      { type: "email", value: "ada@example.com", role: "subject" },
      { type: "phone", value: "+15550100", role: "subject" },
      { type: "tax_id", value: "T-1", role: "subject" },
      { type: "registration_number", value: "0123", role: "subject" },
      { type: "iban", value: "GB82WEST12345698765432", role: "receiver" },
    ]);
  });
});

describe("entity resolution", () => {
  it("links a case to its entities when it is accepted, found by a value written another way", async () => {
    const partner = await partnerWithWorkflow();
    const caseId = await submit(partner, payment("DE89 3704 0044 0532 0130 00", "cust-1", "dev-1"));
    const [iban] = await find(partner.tenantId, "iban", "de89370400440532013000");
    expect(iban).toMatchObject({ type: "iban", value: "DE89370400440532013000", caseCount: 1 });
    const cases = await admin(`/admin/tenants/${partner.tenantId}/entities/${iban?.entityId}/cases`);
    expect(cases.statusCode).toBe(200);
    expect(cases.json().cases.map((c: { caseId: string }) => c.caseId)).toEqual([caseId]);
    expect((await find(partner.tenantId, "customer", " cust-1 "))[0]?.caseCount).toBe(1);
    expect((await find(partner.tenantId, "device_id", "dev-1"))[0]?.caseCount).toBe(1);
    expect(await find(partner.tenantId, "iban", "DE00000000000000000000")).toEqual([]);
  });

  it("makes exactly one entity of a new IBAN under 20 concurrent submissions", async () => {
    const partner = await partnerWithWorkflow();
    const ids = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        submit(partner, payment("FR7630006000011234567890189", `cust-c${i}`)),
      ),
    );
    const [iban] = await find(partner.tenantId, "iban", "FR76 3000 6000 0112 3456 7890 189");
    expect(iban?.caseCount).toBe(20);
    const count = await h.ctx.db.root
      .selectFrom("entities")
      .select((eb) => eb.fn.countAll<string>().as("n"))
      .where("tenant_id", "=", partner.tenantId)
      .where("type", "=", "iban")
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(1);
    const listed = await casesOf(partner.tenantId, iban?.entityId, 7);
    expect(listed.sort()).toEqual([...ids].sort());
  });

  it("lists an entity's cases newest first over years of history, and counts and relates them all", async () => {
    const partner = await partnerWithWorkflow();
    const DAY = 86_400_000;
    const now = Date.now();
    const ago = [3 * 365, 400, 40, 9, 3, 0].map((days) => days * DAY);
    const ids: string[] = [];
    for (const [i, back] of ago.entries()) {
      ids.push(
        await submit(partner, payment("GB29NWBK60161331926819", `cust-w${i}`), {
          eventTimestamp: new Date(now - back).toISOString(),
        }),
      );
    }
    const newestFirst = [...ids].reverse();
    const [iban] = await find(partner.tenantId, "iban", "GB29NWBK60161331926819");
    expect(iban?.caseCount).toBe(6);
    expect(await casesOf(partner.tenantId, iban?.entityId, 2)).toEqual(newestFirst);
    const related = await getRelatedCases(h.ctx, partner.tenantId, newestFirst[0] as string);
    expect(related.map((r) => r.caseId)).toEqual(newestFirst.slice(1));
    expect(related.every((r) => r.shares.type === "iban")).toBe(true);
  });

  it("shows the entities an entity shares cases with, most shared first", async () => {
    const partner = await partnerWithWorkflow();
    await submit(partner, payment("NL91ABNA0417164300", "cust-a", "dev-x"));
    await submit(partner, payment("NL91ABNA0417164300", "cust-a"));
    await submit(partner, payment("NL91ABNA0417164300", "cust-b"));
    const [iban] = await find(partner.tenantId, "iban", "NL91ABNA0417164300");
    const res = await admin(`/admin/tenants/${partner.tenantId}/entities/${iban?.entityId}`);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ type: "iban", caseCount: 3 });
    expect(
      body.linked.map((l: { type: string; value: string; sharedCases: number }) => [
        l.type,
        l.value,
        l.sharedCases,
      ]),
    ).toEqual([
      ["customer", "cust-a", 2],
      ["customer", "cust-b", 1],
      ["device_id", "dev-x", 1],
    ]);
  });

  it("links neither a dry run nor a repeated submission of one idempotency key", async () => {
    const partner = await partnerWithWorkflow();
    const first = await submit(partner, payment("BE68539007547034"), { idempotencyKey: "entity-once" });
    expect(await submit(partner, payment("BE68539007547034"), { idempotencyKey: "entity-once" })).toBe(first);
    const dry = await h.app.inject({
      method: "POST",
      url: `/admin/tenants/${partner.tenantId}/workflows/screen/versions/1/dry-run`,
      headers: adminHeaders,
      payload: {
        type: "Transaction",
        eventTimestamp: new Date().toISOString(),
        payload: { amount: 1 },
        subject: payment("BE68539007547034"),
      },
    });
    expect(dry.statusCode, dry.body).toBeLessThan(300);
    expect((await find(partner.tenantId, "iban", "BE68539007547034"))[0]?.caseCount).toBe(1);
  });

  it("keeps each tenant's entities to itself: another tenant's entity is 404 and never found", async () => {
    const owner = await partnerWithWorkflow();
    const other = await partnerWithWorkflow();
    await submit(owner, payment("IT60X0542811101000000123456", "cust-own"));
    const [iban] = await find(owner.tenantId, "iban", "IT60X0542811101000000123456");
    expect(await find(other.tenantId, "iban", "IT60X0542811101000000123456")).toEqual([]);
    for (const url of [
      `/admin/tenants/${other.tenantId}/entities/${iban?.entityId}`,
      `/admin/tenants/${other.tenantId}/entities/${iban?.entityId}/cases`,
      `/admin/tenants/${owner.tenantId}/entities/not-a-uuid`,
      `/admin/tenants/${owner.tenantId}/entities/00000000-0000-4000-8000-000000000000/cases`,
    ]) {
      const res = await admin(url);
      expect(res.statusCode, url).toBe(404);
    }
  });
});

describe("the entities operator API", () => {
  it("answers 401 without the operator token or with a wrong one, on every route", async () => {
    const partner = await partnerWithWorkflow();
    await submit(partner, payment("ES9121000418450200051332"));
    const [iban] = await find(partner.tenantId, "iban", "ES9121000418450200051332");
    const base = `/admin/tenants/${partner.tenantId}/entities`;
    for (const url of [
      `${base}?type=iban&value=x`,
      `${base}/${iban?.entityId}`,
      `${base}/${iban?.entityId}/cases`,
    ]) {
      for (const headers of [
        {},
        { authorization: `Bearer ${ADMIN_TOKEN}x` },
        { authorization: "Bearer nope" },
      ]) {
        const res = await h.app.inject({ method: "GET", url, headers });
        expect(res.statusCode, url).toBe(401);
      }
    }
  });

  it("refuses an unknown type, a missing value and a forged cursor with 400 naming the field, an unknown tenant with 404", async () => {
    const partner = await partnerWithWorkflow();
    await submit(partner, payment("PT50000201231234567890154"));
    const [iban] = await find(partner.tenantId, "iban", "PT50000201231234567890154");
    const base = `/admin/tenants/${partner.tenantId}/entities`;
    const unknownType = await admin(`${base}?type=shoe_size&value=42`);
    expect(unknownType.statusCode).toBe(400);
    expect(unknownType.body).toContain("type");
    const noValue = await admin(`${base}?type=iban`);
    expect(noValue.statusCode).toBe(400);
    expect(noValue.body).toContain("value");
    const forged = await admin(`${base}/${iban?.entityId}/cases?cursor=bm9wZQ`);
    expect(forged.statusCode).toBe(400);
    expect(forged.body).toContain("cursor");
    const tenant = await admin(
      "/admin/tenants/00000000-0000-4000-8000-000000000000/entities?type=iban&value=x",
    );
    expect(tenant.statusCode).toBe(404);
  });
});
