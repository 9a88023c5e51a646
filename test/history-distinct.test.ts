import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serviceMigrations } from "../src/context.js";
import { ENTITY_TYPES, entityId } from "../src/modules/entities/keys.js";
import { migrate } from "../src/platform/migrate.js";
import { createTestApp, type TestApp } from "./support/app.js";
import { createTestDatabase } from "./support/db.js";
import { adminHeaders, createPartner, enableTags, type Partner } from "./support/fixtures.js";
import { traceFigures, velocityWorkflow } from "./support/history.js";
import { createWorkflow, waitForCase } from "./support/workflows.js";

// countDistinct (contract section 7) from the entities each link carries of its case (`peers`,
// migration 0020): every type, a case with two keys of the `by` type, the filters, dry runs, and a
// case with more keys than its links carry.

let h: TestApp;
beforeAll(async () => {
  h = await createTestApp();
  await h.startWorker();
});
afterAll(async () => {
  await h.close();
});

const HOUR = 3_600_000;
const T = Date.parse("2026-06-01T12:00:00.000Z");
const at = (offsetMs: number) => new Date(T + offsetMs).toISOString();

interface Keys {
  customer: string;
  /** The sender's IBANs. */
  from?: string[];
  /** The receiver's IBAN. */
  to?: string;
  devices?: string[];
  email?: string;
}

/** A Transaction case of these keys: the customer, e-mail and devices are the sender's. */
function transaction(keys: Keys, time: number, amount = 10) {
  return {
    type: "Transaction",
    eventTimestamp: at(time),
    payload: {},
    subject: {
      transaction: {
        amount,
        currency: "EUR",
        parties: [
          {
            role: "sender",
            identifiers: [
              { type: "external_customer_id", value: keys.customer },
              ...(keys.from ?? []).map((value) => ({ type: "iban", value })),
              ...(keys.devices ?? []).map((value) => ({ type: "device_id", value })),
              ...(keys.email ? [{ type: "email", value: keys.email }] : []),
            ],
          },
          ...(keys.to ? [{ role: "receiver", identifiers: [{ type: "iban", value: keys.to }] }] : []),
        ],
      },
    },
  };
}

async function submit(partner: Partner, body: Record<string, unknown>): Promise<string> {
  const res = await h.app.inject({
    method: "POST",
    url: "/cases",
    headers: partner.headers,
    payload: { workflowId: "velocity", ...body },
  });
  expect(res.statusCode, res.body).toBe(201);
  const caseId = res.json().caseId as string;
  await waitForCase(h.app, partner.headers, caseId);
  return caseId;
}

async function partnerWith(aggregates: Record<string, Record<string, unknown>>): Promise<Partner> {
  const partner = await createPartner(h.app);
  await createWorkflow(h.app, partner.tenantId, "velocity", velocityWorkflow(aggregates));
  return partner;
}

const distinct = (by: string, of: string, more: Record<string, unknown> = {}) => ({
  function: "countDistinct",
  by,
  distinct: of,
  window: "P1D",
  ...more,
});

/** The peers each link of the case carries, by the linked entity's type. */
async function peersOf(caseId: string): Promise<Array<{ type: string; peers: number | null }>> {
  const { rows } = await sql<{ type: string; peers: number | null }>`
    SELECT entity_type AS type, cardinality(peers) AS peers FROM case_entities
    WHERE case_id = ${caseId} ORDER BY entity_type, entity_id`.execute(h.ctx.db.root);
  return rows;
}

describe("countDistinct", () => {
  it("counts the distinct entities of each type on the window's cases", async () => {
    const partner = await partnerWith({
      ibans: distinct("customer", "iban"),
      devices: distinct("customer", "device_id"),
      emails: distinct("customer", "email"),
      customers: distinct("customer", "customer"),
      payers: distinct("iban", "customer"),
      payerDevices: distinct("iban", "device_id"),
      nothing: distinct("device_id", "customer"),
    });
    const first = await submit(
      partner,
      transaction(
        { customer: "k1", email: "A@Example.com", devices: ["D1"], to: "NL91ABNA0417164300" },
        -3 * HOUR,
      ),
    );
    await submit(
      partner,
      transaction({ customer: "k1", devices: ["D1", "D2"], to: "BE68539007547034" }, -2 * HOUR),
    );
    await submit(
      partner,
      transaction({ customer: "k2", devices: ["D2"], to: "NL91 ABNA 0417 1643 00" }, -HOUR),
    );
    // Outside the day's window.
    await submit(
      partner,
      transaction({ customer: "k1", devices: ["D3"], to: "DE89370400440532013000" }, -25 * HOUR),
    );
    const probe = await submit(
      partner,
      transaction({ customer: "k1", devices: ["D9"], to: "nl91abna0417164300" }, 0),
    );
    expect(await traceFigures(h.app, probe)).toEqual({
      ibans: 2, // the first two cases' receivers
      devices: 2, // D1 twice, D2
      emails: 1,
      customers: 1, // k1 itself, on each of its cases
      payers: 2, // k1 and k2 paid NL91…
      payerDevices: 2, // D1 (k1's first case), D2 (k2's)
      nothing: 0, // D9 has no past case
    });
    // Each link carries the case's other keys: customer, e-mail, device, IBAN.
    expect(await peersOf(first)).toEqual([
      { type: "customer", peers: 3 },
      { type: "device_id", peers: 3 },
      { type: "email", peers: 3 },
      { type: "iban", peers: 3 },
    ]);
  });

  it("counts once what a case shares through two keys of the `by` type, and those keys themselves", async () => {
    const S = "NL91ABNA0417164300";
    const R = "BE68539007547034";
    const partner = await partnerWith({
      payers: distinct("iban", "customer"),
      ibans: distinct("iban", "iban"),
      devices: distinct("iban", "device_id"),
    });
    await submit(partner, transaction({ customer: "a", from: [S], to: R, devices: ["D1"] }, -3 * HOUR));
    await submit(partner, transaction({ customer: "b", from: ["DE89370400440532013000"], to: R }, -2 * HOUR));
    await submit(partner, transaction({ customer: "c", from: [S], devices: ["D1"] }, -HOUR));
    // Both of the probe's IBANs: the first case through both, counted once.
    const both = await submit(partner, transaction({ customer: "z", from: [S], to: R }, 0));
    expect(await traceFigures(h.app, both)).toEqual({ payers: 3, ibans: 3, devices: 1 });

    // By S alone: its cases are a's and c's, whose IBANs are S itself and R.
    const other = await partnerWith({
      ibans: distinct("iban", "iban"),
      payers: distinct("iban", "customer"),
    });
    await submit(other, transaction({ customer: "a", from: [S], to: R }, -2 * HOUR));
    await submit(other, transaction({ customer: "c", from: [S] }, -HOUR));
    const alone = await submit(other, transaction({ customer: "y", from: [S] }, 0));
    expect(await traceFigures(h.app, alone)).toEqual({ ibans: 2, payers: 2 });
  });

  it("keeps to the case type, the current decision and the tag", async () => {
    const partner = await partnerWith({
      all: distinct("customer", "iban"),
      tx: distinct("customer", "iban", { caseType: "Transaction" }),
      reviewed: distinct("customer", "iban", { decision: "in_review" }),
      approved: distinct("customer", "iban", { decision: "approved" }),
      tagged: distinct("customer", "iban", { tag: "fraud_confirmed" }),
    });
    await enableTags(h.app, partner.tenantId, "fraud_confirmed");
    await submit(partner, transaction({ customer: "g1", to: "NL91ABNA0417164300" }, -4 * HOUR, 2000)); // in review
    const tagged = await submit(partner, transaction({ customer: "g1", to: "BE68539007547034" }, -3 * HOUR));
    await submit(partner, transaction({ customer: "g1", to: "DE89370400440532013000" }, -2 * HOUR));
    await submit(partner, {
      type: "KYC",
      eventTimestamp: at(-HOUR),
      payload: {},
      subject: {
        person: {
          identifiers: [
            { type: "external_customer_id", value: "g1" },
            { type: "iban", value: "GB29NWBK60161331926819" },
          ],
        },
      },
    });
    const tag = await h.app.inject({
      method: "POST",
      url: `/cases/${tagged}/tags`,
      headers: partner.headers,
      payload: { tag: "fraud_confirmed" },
    });
    expect(tag.statusCode, tag.body).toBeLessThan(300);
    const probe = await submit(partner, transaction({ customer: "g1" }, 0));
    expect(await traceFigures(h.app, probe)).toEqual({
      all: 4,
      tx: 3, // not the KYC case's IBAN
      reviewed: 1,
      approved: 2, // the KYC case has none: its screen's rule reads a transaction amount and fails
      tagged: 1,
    });
  });

  it("counts the real history in a dry run, and never a dry run's entities", async () => {
    const partner = await partnerWith({ ibans: distinct("customer", "iban") });
    await submit(partner, transaction({ customer: "d1", to: "NL91ABNA0417164300" }, -HOUR));
    const dryRun = async (to: string) => {
      const res = await h.app.inject({
        method: "POST",
        url: `/admin/tenants/${partner.tenantId}/workflows/velocity/versions/1/dry-run?wait=true`,
        headers: adminHeaders,
        payload: transaction({ customer: "d1", to }, -HOUR / 2),
      });
      expect(res.statusCode, res.body).toBe(201);
      return res.json().trace.find((e: { nodeId: string }) => e.nodeId === "velocity").output;
    };
    expect(await dryRun("BE68539007547034")).toEqual({ ibans: 1 });
    expect(await dryRun("DE89370400440532013000")).toEqual({ ibans: 1 });
    const real = await submit(partner, transaction({ customer: "d1" }, 0));
    expect(await traceFigures(h.app, real)).toEqual({ ibans: 1 });
  });

  it("counts a case with more keys than its links carry by reading its links", async () => {
    const partner = await partnerWith({
      devices: distinct("customer", "device_id"),
      ibans: distinct("customer", "iban"),
      owners: distinct("device_id", "customer"),
      siblings: distinct("device_id", "device_id"),
    });
    const many = Array.from({ length: 18 }, (_, i) => `M${i}`);
    // 20 keys: its links carry no peers.
    const wide = await submit(
      partner,
      transaction({ customer: "w", devices: many, to: "NL91ABNA0417164300" }, -2 * HOUR),
    );
    await submit(
      partner,
      transaction({ customer: "w", devices: ["M0", "X1"], to: "BE68539007547034" }, -HOUR),
    );
    const rows = await peersOf(wide);
    expect(rows).toHaveLength(20);
    expect(rows.every((r) => r.peers === null)).toBe(true);
    // 16 keys, the most whose links carry their peers.
    const sixteen = Array.from({ length: 14 }, (_, i) => `N${i}`);
    const widest = await submit(
      partner,
      transaction({ customer: "v", devices: sixteen, to: "BE68539007547034" }, -HOUR),
    );
    expect((await peersOf(widest)).map((r) => r.peers)).toEqual(Array(16).fill(15));
    const probe = await submit(partner, transaction({ customer: "w", devices: ["M0"] }, 0));
    expect(await traceFigures(h.app, probe)).toEqual({
      devices: 19, // M0 … M17, X1
      ibans: 2,
      owners: 1,
      siblings: 19, // M0 itself, its 17 siblings on the wide case, X1
    });
  });
});

describe("entity types as peers", () => {
  it("gives every entity type its own code, so that one type's peers are one range", async () => {
    const { rows } = await sql<{ type: string; code: number | null }>`
      SELECT t AS type, entity_type_code(t) AS code
      FROM unnest(${[...ENTITY_TYPES]}::text[]) AS t`.execute(h.ctx.db.root);
    const codes = rows.map((r) => r.code);
    expect(codes.every((c) => c !== null && c >= 1 && c <= 63)).toBe(true);
    expect(new Set(codes).size).toBe(ENTITY_TYPES.length);
  });

  it("keeps every bit of the entity's id in its peer, with the type's code in front", async () => {
    const tenant = "00000000-0000-4000-8000-000000000001";
    const ids = ["a", "b", "c", "d", "e", "f"].map((v) => entityId(tenant, "iban", v));
    const { rows } = await sql<{ peer: string; code: number }>`
      SELECT entity_peer(id, 'iban') AS peer, entity_type_code('iban') AS code
      FROM unnest(${ids}::uuid[]) WITH ORDINALITY AS u(id, n) ORDER BY n`.execute(h.ctx.db.root);
    expect(rows.map((r) => idOfPeer(r.peer))).toEqual(ids);
    expect(rows.every((r) => Number.parseInt(r.peer.slice(0, 2), 16) >> 2 === r.code)).toBe(true);
  });
});

describe("migration 0020", () => {
  it("gives the links already there their case's other entities, none past 16 keys", async () => {
    const database = await createTestDatabase({ migrate: false });
    try {
      const { db } = database;
      const all = serviceMigrations();
      await migrate(
        db,
        all.filter((m) => m.version < 20),
      );
      const tenant = crypto.randomUUID();
      const links = [
        ...["a", "b"].map((v) => ({ case: "c2", type: v === "a" ? "customer" : "iban", value: v })),
        ...["a", "b", "c"].map((v) => ({ case: "c3", type: "device_id", value: v })),
        ...Array.from({ length: 17 }, (_, i) => ({ case: "c17", type: "device_id", value: `d${i}` })),
        { case: "c1", type: "customer", value: "a" },
      ];
      const caseIds = new Map(["c1", "c2", "c3", "c17"].map((c) => [c, crypto.randomUUID()]));
      for (const l of links) {
        await sql`
          INSERT INTO case_entities (case_id, entity_id, tenant_id, entity_type, role, case_time, case_type)
          VALUES (${caseIds.get(l.case)}, ${entityId(tenant, l.type, l.value)}, ${tenant}, ${l.type},
                  'subject', now(), 'Transaction')`.execute(db.root);
      }
      await migrate(db, all);
      const { rows } = await sql<{
        case_id: string;
        entity_id: string;
        peers: string[] | null;
        expected: string[];
      }>`
        SELECT l.case_id, l.entity_id, l.peers,
               ARRAY(SELECT entity_peer(o.entity_id, o.entity_type) FROM case_entities o
                     WHERE o.case_id = l.case_id AND o.entity_id <> l.entity_id ORDER BY 1) AS expected
        FROM case_entities l`.execute(db.root);
      expect(rows).toHaveLength(links.length);
      for (const r of rows) {
        if (r.case_id === caseIds.get("c17")) expect(r.peers).toBeNull();
        else expect([...(r.peers ?? ["none"])].sort()).toEqual(r.expected);
      }
      const sizes = rows.map((r) => [r.case_id, r.peers?.length ?? null]);
      expect(sizes.filter(([c]) => c === caseIds.get("c3")).map(([, n]) => n)).toEqual([2, 2, 2]);
      expect(sizes.filter(([c]) => c === caseIds.get("c1")).map(([, n]) => n)).toEqual([0]);
    } finally {
      await database.drop();
    }
  });
});

/** The entity id a peer stands for: the six bits under the type's code put back in front. */
function idOfPeer(peer: string): string {
  const b = Buffer.from(peer.replaceAll("-", ""), "hex");
  const [p0, p6, p8] = [b[0] as number, b[6] as number, b[8] as number];
  b[0] = (p6 & 0xf0) | ((p8 >> 6) << 2) | (p0 & 3);
  b[6] = 0x80 | (p6 & 0x0f);
  b[8] = 0x80 | (p8 & 0x3f);
  const hex = b.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
