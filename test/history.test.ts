import fs from "node:fs";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seedHistory, transactionSubject } from "../bench/lib/history.js";
import { describeFigure, HISTORY_BUDGET_MS, parseWindow } from "../src/modules/entities/aggregate.node.js";
import {
  DistinctWindows,
  LONG_HISTORY,
  LONG_HISTORY_EMBEDDED,
} from "../src/modules/entities/distinct-windows.js";
import {
  computeFigures,
  computeFiguresOfCases,
  type Figure,
  type HistoryCase,
} from "../src/modules/entities/history.js";
import { entityId } from "../src/modules/entities/keys.js";
import type { WorkflowDefinition } from "../src/modules/workflows/workflow.types.js";
import { metricsRegistry } from "../src/platform/metrics.js";
import { createTestApp, type TestApp } from "./support/app.js";
import { runCds } from "./support/cli.js";
import { adminHeaders, createPartner, enableTags, type Partner } from "./support/fixtures.js";
import { traceFigures, velocityWorkflow as velocity } from "./support/history.js";
import { sample } from "./support/metrics.js";
import { createWorkflow, waitForCase } from "./support/workflows.js";

let h: TestApp;
let url: string;
beforeAll(async () => {
  h = await createTestApp();
  await h.startWorker();
  url = await h.app.listen({ port: 0, host: "127.0.0.1" });
});
afterAll(async () => {
  await h.close();
});

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Every case of these tests happens around this moment, whatever the clock says. */
const T = Date.parse("2026-06-01T12:00:00.000Z");
const at = (offsetMs: number) => new Date(T + offsetMs).toISOString();

interface Payment {
  customer: string;
  amount: number;
  time: number;
  currency?: string;
  iban?: string;
  type?: "Transaction" | "KYC";
}

function submission(p: Payment) {
  if (p.type === "KYC") {
    return {
      type: "KYC",
      eventTimestamp: at(p.time),
      payload: {},
      subject: {
        person: { firstName: "A", identifiers: [{ type: "external_customer_id", value: p.customer }] },
      },
    };
  }
  return {
    type: "Transaction",
    eventTimestamp: at(p.time),
    payload: {},
    subject: {
      transaction: {
        amount: p.amount,
        currency: p.currency ?? "EUR",
        parties: [
          { role: "sender", identifiers: [{ type: "external_customer_id", value: p.customer }] },
          ...(p.iban ? [{ role: "receiver", identifiers: [{ type: "iban", value: p.iban }] }] : []),
        ],
      },
    },
  };
}

async function submit(partner: Partner, p: Payment): Promise<string> {
  const res = await h.app.inject({
    method: "POST",
    url: "/cases",
    headers: partner.headers,
    payload: { workflowId: "velocity", ...submission(p) },
  });
  expect(res.statusCode, res.body).toBe(201);
  const caseId = res.json().caseId as string;
  await waitForCase(h.app, partner.headers, caseId);
  return caseId;
}

/** The figures the case's aggregate node computed, from its trace. */
const figuresOf = (caseId: string) => traceFigures(h.app, caseId);

async function partnerWith(aggregates: Record<string, Record<string, unknown>>): Promise<Partner> {
  const partner = await createPartner(h.app);
  await createWorkflow(h.app, partner.tenantId, "velocity", velocity(aggregates));
  return partner;
}

/** A long history of one customer, hot-1 (LONG_HISTORY + 100 cases unless told), over `days` up to now. */
async function seedHotCustomer(
  partner: Partner,
  spread: { ibans: number; days: number },
  cases: number = LONG_HISTORY + 100,
): Promise<void> {
  const template = await submit(partner, { customer: "template", amount: 1, time: Date.now() - T - HOUR });
  await seedHistory(h.database.db, partner.tenantId, template, {
    cases,
    hotCases: cases,
    hotKeys: 1,
    customers: 1,
    ...spread,
  });
}

/**
 * hot-1 with `cases` past cases (LONG_HISTORY + 100 unless told), its hour's count and week's sum,
 * and two new cases of hot-1 at one time (so that their hours hold the same seeded cases): the
 * kept windows' whole reads the second made, and its figures, the same whichever way they were read.
 */
async function twoHotCases(cases?: number) {
  const partner = await partnerWith({
    hour: { function: "count", by: "customer", window: "PT1H" },
    week: { function: "sum", by: "customer", field: "amount", window: "P7D" },
  });
  await seedHotCustomer(partner, { ibans: 100, days: 5 }, cases);
  const reads = async () =>
    sample(await metricsRegistry.metrics(), "cds_history_window_reads_total", { read: "whole" }) ?? 0;
  const now = Date.now() - T;
  const first = await submit(partner, { customer: "hot-1", amount: 5, time: now });
  const before = await reads();
  const second = await submit(partner, { customer: "hot-1", amount: 7, time: now });
  const wholeReads = (await reads()) - before;
  const [a, b] = (await Promise.all([first, second].map((id) => figuresOf(id)))) as Array<{
    hour: number;
    week: number;
  }>;
  expect(b?.week).toBeCloseTo((a?.week ?? 0) + 5, 6);
  expect(b?.hour).toBe((a?.hour ?? 0) + 1);
  return { wholeReads, partner, now, b };
}

describe("the aggregate node", () => {
  it("counts, sums, averages and bounds the customer's other cases in the window ending at the case's own time", async () => {
    const partner = await partnerWith({
      n1h: { function: "count", by: "customer", window: "PT1H" },
      n1d: { function: "count", by: "customer", window: "P1D" },
      sum1d: { function: "sum", field: "amount", by: "customer", window: "P1D" },
      avg1d: { function: "avg", field: "amount", by: "customer", window: "P1D" },
      min1d: { function: "min", field: "amount", by: "customer", window: "P1D" },
      max1d: { function: "max", field: "amount", by: "customer", window: "P1D" },
      other: { function: "count", by: "iban", window: "P1D" },
    });
    await submit(partner, { customer: "c1", amount: 100, time: -25 * HOUR }); // before the day
    await submit(partner, { customer: "c1", amount: 200, time: -2 * HOUR });
    await submit(partner, { customer: "c1", amount: 300, time: -30 * 60_000 });
    await submit(partner, { customer: "c1", amount: 50, time: -HOUR / 6, currency: "USD" }); // another currency
    await submit(partner, { customer: "c1", amount: 900, time: 5 * 60_000 }); // after the case's time
    await submit(partner, { customer: "c2", amount: 700, time: -60_000 }); // another customer
    const probe = await submit(partner, { customer: "c1", amount: 10, time: 0 });
    expect(await figuresOf(probe)).toEqual({
      n1h: 2, // 30 min and 10 min before (the USD one counts: count reads no amount)
      n1d: 3,
      sum1d: 500, // EUR only
      avg1d: 250,
      min1d: 200,
      max1d: 300,
      other: 0, // the case has no IBAN
    });
  });

  it("reads windows of a week to 400 days, each case once, at a week's and a window's edges too", async () => {
    // T is a Monday noon: its week (from Monday 00:00 UTC) began 12 hours before.
    const partner = await partnerWith({
      n7: { function: "count", by: "customer", window: "P7D" },
      n30: { function: "count", by: "customer", window: "P30D" },
      s400: { function: "sum", field: "amount", by: "customer", window: "P400D" },
      d30: { function: "countDistinct", distinct: "iban", by: "customer", window: "P30D" },
    });
    const pay = (amount: number, time: number, iban: string) =>
      submit(partner, { customer: "weeks", amount, time, iban });
    await pay(1, -12 * HOUR, "DE89370400440532013000"); // the first moment of T's week
    await pay(2, -12 * HOUR - 1, "FR7630006000011234567890189"); // the last of the week before
    await pay(4, -7 * DAY, "DE89370400440532013000"); // the seven days' start: out of them
    await pay(8, -7 * DAY + 1, "NL91ABNA0417164300");
    await pay(16, -29 * DAY, "BE68539007547034");
    await pay(32, -399 * DAY, "IT60X0542811101000000123456");
    await pay(64, -401 * DAY, "ES9121000418450200051332"); // before every window
    const probe = await submit(partner, { customer: "weeks", amount: 0, time: 0 });
    expect(await figuresOf(probe)).toEqual({ n7: 3, n30: 5, s400: 63, d30: 4 });
  });

  it("answers 0 for count and sum, null for avg, min and max, over nothing", async () => {
    const partner = await partnerWith({
      n: { function: "count", by: "customer", window: "PT1H" },
      s: { function: "sum", field: "amount", by: "customer", window: "PT1H" },
      a: { function: "avg", field: "amount", by: "customer", window: "PT1H" },
      lo: { function: "min", field: "amount", by: "customer", window: "PT1H" },
      hi: { function: "max", field: "amount", by: "customer", window: "PT1H" },
      d: { function: "countDistinct", distinct: "iban", by: "customer", window: "PT1H" },
    });
    const first = await submit(partner, { customer: "lonely", amount: 10, time: 0 });
    expect(await figuresOf(first)).toEqual({ n: 0, s: 0, a: null, lo: null, hi: null, d: 0 });
  });

  it("filters by case type, current decision and tag, and counts distinct entities", async () => {
    const partner = await partnerWith({
      tx: { function: "count", by: "customer", window: "P1D", caseType: "Transaction" },
      all: { function: "count", by: "customer", window: "P1D" },
      reviewed: { function: "count", by: "customer", window: "P1D", decision: "in_review" },
      approvedSum: { function: "sum", field: "amount", by: "customer", window: "P1D", decision: "approved" },
      tagged: { function: "count", by: "customer", window: "P1D", tag: "fraud_confirmed" },
      ibans: { function: "countDistinct", distinct: "iban", by: "customer", window: "P1D" },
      users: { function: "countDistinct", distinct: "customer", by: "iban", window: "P1D" },
      ibanTx: { function: "max", field: "amount", by: "iban", window: "P1D", caseType: "Transaction" },
    });
    await enableTags(h.app, partner.tenantId, "fraud_confirmed");
    await submit(partner, {
      customer: "f1",
      amount: 2000,
      time: -3 * HOUR,
      iban: "DE89 3704 0044 0532 0130 00",
    });
    const tagged = await submit(partner, {
      customer: "f1",
      amount: 40,
      time: -2 * HOUR,
      iban: "DE89370400440532013000",
    });
    await submit(partner, { customer: "f1", amount: 60, time: -HOUR, iban: "GB29NWBK60161331926819" });
    await submit(partner, { customer: "f1", amount: 0, time: -HOUR / 2, type: "KYC" });
    await submit(partner, { customer: "f2", amount: 5, time: -HOUR / 3, iban: "DE89370400440532013000" });
    const tag = await h.app.inject({
      method: "POST",
      url: `/cases/${tagged}/tags`,
      headers: partner.headers,
      payload: { tag: "fraud_confirmed" },
    });
    expect(tag.statusCode, tag.body).toBeLessThan(300);
    const probe = await submit(partner, {
      customer: "f1",
      amount: 1,
      time: 0,
      iban: "de89370400440532013000",
    });
    expect(await figuresOf(probe)).toEqual({
      tx: 3,
      all: 4,
      reviewed: 1,
      approvedSum: 100,
      tagged: 1,
      ibans: 2,
      users: 2, // f1 and f2 paid the IBAN
      ibanTx: 2000,
    });
  });

  it("counts a case once when it shares several entities of the type with this one", async () => {
    const partner = await partnerWith({
      n: { function: "count", by: "iban", window: "P1D" },
      s: { function: "sum", field: "amount", by: "iban", window: "P1D" },
    });
    const twoIbans = (customer: string, amount: number, time: number) => ({
      workflowId: "velocity",
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
                { type: "external_customer_id", value: customer },
                { type: "iban", value: "NL91ABNA0417164300" },
              ],
            },
            { role: "receiver", identifiers: [{ type: "iban", value: "BE68539007547034" }] },
          ],
        },
      },
    });
    for (const [customer, amount, time] of [
      ["a", 10, -HOUR],
      ["b", 20, -1],
    ] as const) {
      const res = await h.app.inject({
        method: "POST",
        url: "/cases",
        headers: partner.headers,
        payload: twoIbans(customer, amount, time),
      });
      await waitForCase(h.app, partner.headers, res.json().caseId);
    }
    const res = await h.app.inject({
      method: "POST",
      url: "/cases",
      headers: partner.headers,
      payload: twoIbans("c", 1, 0),
    });
    await waitForCase(h.app, partner.headers, res.json().caseId);
    expect(await figuresOf(res.json().caseId)).toEqual({ n: 2, s: 30 });
  });

  it("computes several cases' figures of every kind in one statement, each as it would alone", async () => {
    const partner = await partnerWith({ n: { function: "count", by: "customer", window: "P1D" } });
    await enableTags(h.app, partner.tenantId, "fraud_confirmed");
    const past = [
      { customer: "m1", amount: 100, time: -3 * HOUR, iban: "DE89370400440532013000" },
      { customer: "m1", amount: 250, time: -2 * HOUR, iban: "GB29NWBK60161331926819" },
      { customer: "m2", amount: 40, time: -HOUR, iban: "DE89370400440532013000" },
      { customer: "m2", amount: 7, time: -HOUR / 2, currency: "USD" },
      { customer: "m3", amount: 0, time: -HOUR / 4, type: "KYC" as const },
    ];
    const ids: string[] = [];
    for (const p of past) ids.push(await submit(partner, p));
    const tag = await h.app.inject({
      method: "POST",
      url: `/cases/${ids[1]}/tags`,
      headers: partner.headers,
      payload: { tag: "fraud_confirmed" },
    });
    expect(tag.statusCode, tag.body).toBeLessThan(300);
    const figures: Figure[] = [
      { function: "count", by: "customer", windowMs: 24 * HOUR },
      { function: "count", by: "customer", windowMs: 24 * HOUR, caseType: "Transaction" },
      { function: "sum", by: "customer", windowMs: 24 * HOUR },
      { function: "avg", by: "iban", windowMs: 24 * HOUR },
      { function: "min", by: "customer", windowMs: 24 * HOUR, decision: "approved" },
      { function: "max", by: "customer", windowMs: 24 * HOUR, tag: "fraud_confirmed" },
      { function: "countDistinct", by: "customer", windowMs: 24 * HOUR, distinct: "iban" },
      { function: "countDistinct", by: "iban", windowMs: 24 * HOUR, distinct: "customer" },
      { function: "countDistinct", by: "iban", windowMs: 24 * HOUR, distinct: "iban" },
      { function: "count", by: "customer", windowMs: 90 * 60_000 },
    ];
    // Cases that are not stored: the figures read only the history, as of each case's own time.
    const probe = (customer: string, iban: string | null, currency: string, time: number): HistoryCase => ({
      id: crypto.randomUUID(),
      tenantId: partner.tenantId,
      subject: submission({ customer, amount: 1, time, currency, ...(iban ? { iban } : {}) }).subject,
      externalCustomerId: null,
      time: new Date(T + time),
      createdAt: new Date(),
    });
    const probes = [
      probe("m1", "de89 3704 0044 0532 0130 00", "EUR", 0),
      probe("m2", "GB29NWBK60161331926819", "USD", 0),
      probe("m1", null, "EUR", -2.5 * HOUR),
      probe("nobody", "FR1420041010050500013M02606", "EUR", 0),
    ];
    const db = h.ctx.db.boundedReads(HISTORY_BUDGET_MS) ?? h.ctx.db.root;
    const together = await computeFiguresOfCases(
      db,
      probes.map((kase, i) => ({ kase, figures: i === 2 ? figures.slice(0, 3) : figures })),
    );
    const alone = await Promise.all(
      probes.map((kase, i) => computeFigures(db, kase, i === 2 ? figures.slice(0, 3) : figures)),
    );
    expect(together).toEqual(alone);
    expect(together[0]).toEqual([2, 2, 350, 70, 100, 250, 2, 2, 1, 0]);
    expect(together[1]).toEqual([2, 2, 7, null, 7, null, 1, 1, 1, 2]);
    expect(together[2]).toEqual([1, 1, 100]);
    expect(together[3]).toEqual([0, 0, 0, null, null, null, 0, 0, 0, 0]);
  });

  it("answers a distinct count over a long history from a kept window, exactly as the statement does", async () => {
    const partner = await partnerWith({ n: { function: "count", by: "customer", window: "P1D" } });
    // A history seeded through the service's own tables, as the benchmark's: hot-1 has more
    // cases in 30 days than a figure counts before its key is known as long.
    const template = await submit(partner, { customer: "template", amount: 1, time: Date.now() - T - HOUR });
    const seed = (cases: number, days: number, ibans: number) =>
      seedHistory(h.database.db, partner.tenantId, template, {
        cases,
        hotCases: cases,
        hotKeys: 1,
        customers: 1,
        ibans,
        days,
      });
    await seed(LONG_HISTORY + 500, 20, 2_000);
    // On the embedded database as the node keeps them there: its horizon is its one session's.
    const windows = new DistinctWindows({ oneSession: h.database.db.kind === "pglite" });
    const figure: Figure = {
      function: "countDistinct",
      by: "customer",
      distinct: "iban",
      windowMs: 30 * 86_400_000,
    };
    const db = h.database.db.root;
    /** The kept window's answer and the statement's, for a case of hot-1 at `to`, accepted at `accepted`. */
    const both = async (to: number, accepted: number, windowMs = figure.windowMs, asked = figure) => {
      const caseId = crypto.randomUUID();
      const fromWindow = await windows.count(db, {
        tenantId: partner.tenantId,
        entityId: entityId(partner.tenantId, "customer", "hot-1"),
        fn: asked.function,
        distinctType: asked.distinct ?? null,
        currency: asked.function === "count" ? null : "EUR",
        caseType: asked.caseType ?? null,
        from: new Date(to - windowMs),
        to: new Date(to),
        acceptedBefore: new Date(accepted),
        caseId,
      });
      const [fromStatement] = await computeFigures(
        db,
        {
          id: caseId,
          tenantId: partner.tenantId,
          subject: transactionSubject("hot-1", "GB29NWBK60161331926819", 1),
          externalCustomerId: "hot-1",
          time: new Date(to),
          createdAt: new Date(accepted),
        },
        [{ ...asked, windowMs }],
      );
      return { fromWindow, fromStatement };
    };
    const now = Date.now();
    const first = await both(now, now);
    const distinct = first.fromStatement ?? 0;
    expect(distinct).toBeGreaterThan(1_000);
    expect(first.fromWindow).toBe(first.fromStatement);
    // Windows ending earlier and later, and cases accepted earlier, which count fewer links.
    for (const [to, accepted] of [
      [now + 60_000, now + 60_000],
      [now - 3 * 86_400_000, now],
      [now, now - 5 * 86_400_000],
      [now + 120_000, now - 10 * 86_400_000],
    ] as const) {
      const { fromWindow, fromStatement } = await both(to, accepted);
      expect(fromWindow).toBe(fromStatement);
    }
    // New cases through the service: the window reads those accepted since it last read, of a
    // case time now, and of one half a minute and one two days back (read from the index of late
    // links, past ten seconds).
    for (const [iban, time] of [
      ["DE89370400440532013000", Date.now() - T],
      ["FR1420041010050500013M02606", Date.now() - T],
      ["IT60X0542811101000000123456", Date.now() - T - 30_000],
      ["NL91ABNA0417164300", Date.now() - T - 2 * 86_400_000],
    ] as const) {
      await submit(partner, { customer: "hot-1", amount: 5, time, iban });
    }
    const later = await both(Date.now(), Date.now());
    expect(later.fromStatement).toBe(distinct + 4);
    expect(later.fromWindow).toBe(later.fromStatement);
    if (process.env.DATABASE_URL) {
      // A link whose transaction began before a read and commits after it, accepted as long
      // before its transaction began as a case may be: the next read brings it.
      const other = new pg.Client({ connectionString: h.database.url });
      await other.connect();
      try {
        await other.query("BEGIN");
        await other.query(
          `INSERT INTO case_entities (case_id, entity_id, tenant_id, entity_type, role, case_time,
             accepted_at, case_type, amount, currency, peers)
           VALUES ($1, $2, $3, 'customer', 'sender', now() - interval '1 day',
             now() - interval '0.9 seconds', 'Transaction', 5, 'EUR', ARRAY[entity_peer($4, 'iban')])`,
          [
            crypto.randomUUID(),
            entityId(partner.tenantId, "customer", "hot-1"),
            partner.tenantId,
            entityId(partner.tenantId, "iban", "BE68539007547034"),
          ],
        );
        // Until the link's transaction is older than the acceptance lag, so that a read's own
        // time less the lag is past the link's acceptance.
        for (;;) {
          const { rows } = await other.query(
            "SELECT clock_timestamp() - now() > interval '0.5 seconds' AS old",
          );
          if (rows[0].old) break;
        }
        const during = await both(Date.now(), Date.now());
        expect(during.fromWindow).toBe(during.fromStatement);
        expect(during.fromStatement).toBe(distinct + 4);
        await other.query("COMMIT");
      } finally {
        await other.end();
      }
      const after = await both(Date.now(), Date.now());
      expect(after.fromStatement).toBe(distinct + 5);
      expect(after.fromWindow).toBe(after.fromStatement);
    }
    // A window reaching back before what is kept, and a shorter one.
    const back = await both(Date.now() - 12 * 86_400_000, Date.now());
    expect(back.fromWindow).toBe(back.fromStatement);
    const week = await both(Date.now(), Date.now(), 7 * 86_400_000);
    expect(week.fromWindow).toBe(week.fromStatement);
    // Windows sliding back and forth, of several lengths, ending anywhere in the last ten days.
    let seedValue = 17;
    const random = () => {
      seedValue = (seedValue * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seedValue / 2_147_483_648;
    };
    for (let i = 0; i < 25; i++) {
      const to = Date.now() - Math.floor(random() * 10 * DAY);
      const accepted = random() < 0.5 ? Date.now() : to - Math.floor(random() * 3 * DAY);
      const windowMs = [DAY, 7 * DAY, 30 * DAY][Math.floor(random() * 3)] as number;
      const { fromWindow, fromStatement } = await both(to, accepted, windowMs);
      expect(fromWindow, `window ending ${new Date(to).toISOString()}, ${windowMs / DAY} days`).toBe(
        fromStatement,
      );
    }
    // Counts, sums, averages and bounds from a window of their own, among amounts that binary
    // fractions cannot hold, another currency, and KYC cases of the same customer.
    const payments: Payment[] = [
      { customer: "hot-1", amount: 0.1, time: Date.now() - T - 3 * DAY },
      { customer: "hot-1", amount: 0.7, time: Date.now() - T - DAY },
      { customer: "hot-1", amount: 1.3, time: Date.now() - T, currency: "USD" },
      { customer: "hot-1", amount: 2.9, time: Date.now() - T },
      { customer: "hot-1", amount: 0, time: Date.now() - T, type: "KYC" },
    ];
    for (const payment of payments) await submit(partner, payment);
    const others: Figure[] = [
      { function: "count", by: "customer", windowMs: 7 * DAY },
      { function: "count", by: "customer", windowMs: DAY, caseType: "KYC" },
      { function: "sum", by: "customer", windowMs: 7 * DAY },
      { function: "avg", by: "customer", windowMs: 30 * DAY },
      { function: "min", by: "customer", windowMs: 2 * DAY },
      { function: "max", by: "customer", windowMs: 7 * DAY, caseType: "Transaction" },
      { function: "sum", by: "customer", windowMs: 3_600_000, caseType: "KYC" },
    ];
    for (let i = 0; i < 30; i++) {
      const asked = others[i % others.length] as Figure;
      const to = i < others.length ? Date.now() : Date.now() - Math.floor(random() * 5 * DAY);
      const accepted = i % 3 === 0 ? to - Math.floor(random() * DAY) : Date.now();
      const { fromWindow, fromStatement } = await both(to, accepted, asked.windowMs, asked);
      expect(
        fromWindow,
        `${asked.function} over ${asked.windowMs / DAY} days ending ${new Date(to).toISOString()}`,
      ).toBe(fromStatement);
      if (i === 1) expect(fromStatement).toBe(1);
      if (i === 2) expect(fromStatement).toBeGreaterThan(3.7);
    }
  });

  it("decides a case over a long history with the figures the statement gives", async () => {
    const partner = await partnerWith({
      n: { function: "count", by: "customer", window: "P30D" },
      ibans: { function: "countDistinct", by: "customer", distinct: "iban", window: "P30D" },
    });
    await seedHotCustomer(partner, { ibans: 3_000, days: 20 });
    // The first case teaches the process that hot-1 is long; the others use its kept window.
    const ids: string[] = [];
    for (const iban of ["GB29NWBK60161331926819", "DE89370400440532013000", "GB29NWBK60161331926819"]) {
      ids.push(await submit(partner, { customer: "hot-1", amount: 5, time: Date.now() - T, iban }));
    }
    const figures = await Promise.all(ids.map((id) => figuresOf(id)));
    const [a, b, c] = figures as Array<{ n: number; ibans: number }>;
    expect(a?.n).toBe(LONG_HISTORY + 100);
    expect(b?.n).toBe(LONG_HISTORY + 101);
    expect(c?.n).toBe(LONG_HISTORY + 102);
    // Each new IBAN counts once: the first case's is new, the second's too, the third repeats the first's.
    expect(b?.ibans).toBe((a?.ibans ?? 0) + 1);
    expect(c?.ibans).toBe((a?.ibans ?? 0) + 2);
  });

  it("reads a long key's links once for all of a node's figures, the shortest window asked first", async () => {
    const partner = await partnerWith({
      hour: { function: "count", by: "customer", window: "PT1H" },
      week: { function: "sum", by: "customer", field: "amount", window: "P7D" },
      n: { function: "count", by: "customer", window: "P7D" },
    });
    await seedHotCustomer(partner, { ibans: 100, days: 5 });
    const reads = async () => {
      const text = await metricsRegistry.metrics();
      return {
        whole: sample(text, "cds_history_window_reads_total", { read: "whole" }) ?? 0,
        new: sample(text, "cds_history_window_reads_total", { read: "new" }) ?? 0,
      };
    };
    // The first case teaches the process that hot-1 is long (its week's count); the next ones ask
    // its kept window for all three figures, the hour's count first. All three at one time: their
    // windows are the same whatever time passes between them, so each counts the one before it and
    // no seeded case leaves the hour in between.
    const now = Date.now() - T;
    const first = await submit(partner, { customer: "hot-1", amount: 5, time: now });
    const before = await reads();
    const second = await submit(partner, { customer: "hot-1", amount: 7, time: now });
    const between = await reads();
    const third = await submit(partner, { customer: "hot-1", amount: 9, time: now });
    const after = await reads();
    // One read of the week's links answers the hour's count too; the next case reads what is new.
    expect(between.whole - before.whole).toBe(1);
    expect(after.whole - between.whole).toBe(0);
    expect(after.new - between.new).toBeGreaterThanOrEqual(1);
    const [a, b, c] = (await Promise.all([first, second, third].map((id) => figuresOf(id)))) as Array<{
      hour: number;
      week: number;
      n: number;
    }>;
    expect(a?.n).toBeGreaterThanOrEqual(LONG_HISTORY);
    expect(b?.n).toBe((a?.n ?? 0) + 1);
    // A sum is given to 15 significant digits; the test's own addition of the seeded amounts' cents
    // can differ from it in the last binary digit (5096590.41 + 5 is 5096595.41000001).
    expect(b?.week).toBeCloseTo((a?.week ?? 0) + 5, 6);
    expect(c?.week).toBeCloseTo((b?.week ?? 0) + 7, 6);
    expect(b?.hour).toBe((a?.hour ?? 0) + 1);
    expect(c?.hour).toBe((a?.hour ?? 0) + 2);
  });

  it("knows a history as long from a tenth of the cases on the embedded database, and only from all of them on PostgreSQL", async () => {
    // Between the two thresholds: long on the embedded database, short on PostgreSQL.
    const { wholeReads } = await twoHotCases(LONG_HISTORY_EMBEDDED + 100);
    expect(wholeReads).toBe(process.env.DATABASE_URL ? 0 : 1);
  });

  it("learns a long history from the cases a sum read, keeps it while its kept window answers, and reads it once a batch", async () => {
    // The first case's week read more than LONG_HISTORY cases: the next asks hot-1's kept window.
    const { wholeReads, partner, now, b } = await twoHotCases();
    expect(wholeReads).toBe(1);
    // The third case's hour, answered by the kept window, does not unlearn hot-1 (it did: its 2
    // cases were taken for the history's length); its two figures share one read of the new links.
    const newReads = async () =>
      sample(await metricsRegistry.metrics(), "cds_history_window_reads_total", { read: "new" }) ?? 0;
    const beforeThird = await newReads();
    const third = await submit(partner, { customer: "hot-1", amount: 11, time: now });
    expect((await newReads()) - beforeThird).toBe(1);
    const c = (await figuresOf(third)) as { hour: number; week: number };
    expect(c.week).toBeCloseTo((b?.week ?? 0) + 7, 6);
    expect(c.hour).toBe((b?.hour ?? 0) + 1);
  });

  it("reads what is new in all of a batch's kept windows in one statement", async () => {
    // Two kept windows of one key: the week's amounts, and the month's IBANs for the distinct count.
    const partner = await partnerWith({
      week: { function: "sum", by: "customer", field: "amount", window: "P7D" },
      ibans: { function: "countDistinct", by: "customer", distinct: "iban", window: "P30D" },
    });
    await seedHotCustomer(partner, { ibans: 100, days: 5 });
    const reads = async (read: "whole" | "new") =>
      sample(await metricsRegistry.metrics(), "cds_history_window_reads_total", { read }) ?? 0;
    const iban = "GB29NWBK60161331926819";
    const now = Date.now() - T;
    const first = await submit(partner, { customer: "hot-1", amount: 5, time: now, iban });
    const whole = await reads("whole");
    const second = await submit(partner, { customer: "hot-1", amount: 7, time: now, iban });
    expect((await reads("whole")) - whole).toBe(2);
    const before = await reads("new");
    const third = await submit(partner, {
      customer: "hot-1",
      amount: 11,
      time: now,
      iban: "DE89370400440532013000",
    });
    // Both windows brought up to date by one read (it was one read each).
    expect((await reads("new")) - before).toBe(1);
    const [a, b, c] = (await Promise.all([first, second, third].map((id) => figuresOf(id)))) as Array<{
      week: number;
      ibans: number;
    }>;
    expect(b?.week).toBeCloseTo((a?.week ?? 0) + 5, 6);
    expect(c?.week).toBeCloseTo((b?.week ?? 0) + 7, 6);
    // The first case's IBAN is new to hot-1's seeded history, so the second counts it; the third's
    // IBAN is new again, but counted only by a later case.
    expect(b?.ibans).toBe((a?.ibans ?? 0) + 1);
    expect(c?.ibans).toBe(b?.ibans);
  });

  it("keeps each tenant's history to itself", async () => {
    const figures = { n: { function: "count", by: "customer", window: "P1D" } };
    const one = await partnerWith(figures);
    const two = await partnerWith(figures);
    await submit(one, { customer: "shared-id", amount: 1, time: -HOUR });
    const probe = await submit(two, { customer: "shared-id", amount: 1, time: 0 });
    expect(await figuresOf(probe)).toEqual({ n: 0 });
  });

  it("lets a dry run count the real history, and never counts a dry run", async () => {
    const partner = await partnerWith({ n: { function: "count", by: "customer", window: "P1D" } });
    await submit(partner, { customer: "d1", amount: 1, time: -HOUR });
    const dryRun = async () => {
      const res = await h.app.inject({
        method: "POST",
        url: `/admin/tenants/${partner.tenantId}/workflows/velocity/versions/1/dry-run?wait=true`,
        headers: adminHeaders,
        payload: submission({ customer: "d1", amount: 1, time: 0 }),
      });
      expect(res.statusCode, res.body).toBe(201);
      return res.json().trace.find((e: { nodeId: string }) => e.nodeId === "velocity").output;
    };
    expect(await dryRun()).toEqual({ n: 1 });
    expect(await dryRun()).toEqual({ n: 1 });
    const real = await submit(partner, { customer: "d1", amount: 1, time: HOUR });
    expect(await figuresOf(real)).toEqual({ n: 1 });
  });

  it("shows its figures in the trace and in words in `cds case show`", async () => {
    const partner = await partnerWith({
      tx_1h: { function: "count", by: "customer", window: "PT1H" },
      amount_7d: { function: "sum", field: "amount", by: "customer", window: "P7D" },
    });
    for (const minutes of [50, 40, 30])
      await submit(partner, { customer: "w1", amount: 100, time: -minutes * 60_000 });
    const probe = await submit(partner, { customer: "w1", amount: 100, time: 0 });
    const res = await h.app.inject({ url: `/admin/cases/${probe}`, headers: adminHeaders });
    const entry = res.json().trace.find((e: { nodeId: string }) => e.nodeId === "velocity");
    expect(entry.figures).toEqual([
      { name: "tx_1h", function: "count", by: "customer", window: "PT1H", value: 3 },
      { name: "amount_7d", function: "sum", field: "amount", by: "customer", window: "P7D", value: 300 },
    ]);
    const shown = await runCds(url, "case", "show", "--case", probe);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain("tx_1h: 3 cases of this customer in the last hour");
    expect(shown.stdout).toContain(
      "amount_7d: 300 in total on the cases of this customer in the last 7 days",
    );
  });
});

describe.skipIf(!process.env.DATABASE_URL)("the history budget on PostgreSQL", () => {
  it("fails the case with a clear error when its figures cannot be had in time, and the engine goes on", async () => {
    const partner = await partnerWith({ n: { function: "count", by: "customer", window: "P1D" } });
    // Another session holds the links table: the figures' statement waits past the budget.
    const blocker = new pg.Client({ connectionString: h.database.url });
    await blocker.connect();
    try {
      await blocker.query("BEGIN");
      await blocker.query("LOCK TABLE case_entities IN ACCESS EXCLUSIVE MODE");
      const res = await h.app.inject({
        method: "POST",
        url: `/admin/tenants/${partner.tenantId}/workflows/velocity/versions/1/dry-run?wait=true`,
        headers: adminHeaders,
        payload: submission({ customer: "slow", amount: 1, time: 0 }),
      });
      expect(res.statusCode, res.body).toBe(201);
      expect(res.json().status).toBe("failed");
      const entry = res.json().trace.find((e: { nodeId: string }) => e.nodeId === "velocity");
      expect(entry.error.message).toContain(`longer than ${HISTORY_BUDGET_MS} ms`);
    } finally {
      await blocker.query("ROLLBACK");
      await blocker.end();
    }
    // The same process decides the next case as usual.
    const next = await submit(partner, { customer: "slow", amount: 1, time: 0 });
    expect(await figuresOf(next)).toEqual({ n: 0 });
  });
});

/** The JSON block that follows `<!-- example: name -->` in docs/workflows.md. */
function docExample(name: string): WorkflowDefinition {
  const doc = fs.readFileSync(new URL("../docs/workflows.md", import.meta.url), "utf8");
  const match = new RegExp(`<!-- example: ${name} -->\\n\`\`\`json\\n([\\s\\S]*?)\\n\`\`\``).exec(doc);
  if (!match?.[1]) throw new Error(`docs/workflows.md has no example ${name}`);
  return JSON.parse(match[1]);
}

describe("the velocity example of docs/workflows.md", () => {
  it("approves a first payment, reviews the tenth in an hour, declines a blocked IBAN written another way", async () => {
    const partner = await createPartner(h.app);
    const lists = `/admin/tenants/${partner.tenantId}/lists/blocked_ibans`;
    const created = await h.app.inject({
      method: "PUT",
      url: lists,
      headers: adminHeaders,
      payload: { normalize: "iban" },
    });
    expect(created.statusCode, created.body).toBe(200);
    const added = await h.app.inject({
      method: "POST",
      url: `${lists}/values`,
      headers: adminHeaders,
      payload: { add: ["GB29 NWBK 6016 1331 9268 19"] },
    });
    expect(added.statusCode, added.body).toBe(200);
    await createWorkflow(h.app, partner.tenantId, "velocity", docExample("velocity"));
    const decisionOf = async (p: Payment) => {
      const caseId = await submit(partner, p);
      const res = await h.app.inject({ url: `/admin/cases/${caseId}`, headers: adminHeaders });
      const body = res.json();
      return (body.result?.decision?.value ?? `${body.status}: ${JSON.stringify(body.trace)}`) as string;
    };
    expect(
      await decisionOf({ customer: "v1", amount: 20, time: -50 * 60_000, iban: "DE89370400440532013000" }),
    ).toBe("approved");
    for (let i = 1; i < 10; i++) {
      expect(await decisionOf({ customer: "v1", amount: 20, time: -50 * 60_000 + i * 60_000 })).toBe(
        "approved",
      );
    }
    expect(await decisionOf({ customer: "v1", amount: 20, time: 0 })).toBe("in_review");
    expect(await decisionOf({ customer: "v2", amount: 20, time: 0, iban: "gb29nwbk60161331926819" })).toBe(
      "declined",
    );
    expect(await decisionOf({ customer: "v3", amount: 9_999, time: -HOUR * 48 })).toBe("approved");
    expect(await decisionOf({ customer: "v3", amount: 2, time: 0 })).toBe("in_review");
  });
});

describe("aggregate definitions", () => {
  it("reads windows in weeks, days, hours, minutes and seconds, and nothing else", () => {
    expect(parseWindow("PT1H")).toBe(HOUR);
    expect(parseWindow("P7D")).toBe(7 * 24 * HOUR);
    expect(parseWindow("P1W")).toBe(7 * 24 * HOUR);
    expect(parseWindow("P1DT12H")).toBe(36 * HOUR);
    for (const bad of ["P1M", "P1Y", "1H", "P", "PT", "PT1.5H", ""])
      expect(parseWindow(bad), bad).toBeUndefined();
    expect(describeFigure({ function: "count", by: "customer", window: "PT1H", value: 14 })).toBe(
      "14 cases of this customer in the last hour",
    );
    expect(
      describeFigure({
        function: "countDistinct",
        by: "iban",
        distinct: "customer",
        window: "P30D",
        value: 40,
      }),
    ).toBe("40 distinct customer values on the cases of this iban in the last 30 days");
  });

  it("refuses every invalid figure at creation with 400 at its path", async () => {
    const partner = await createPartner(h.app);
    const refused = async (aggregates: unknown, path: string, message: RegExp) => {
      const res = await h.app.inject({
        method: "POST",
        url: `/admin/tenants/${partner.tenantId}/workflows/bad/versions`,
        headers: adminHeaders,
        payload: velocity(aggregates as Record<string, Record<string, unknown>>),
      });
      expect(res.statusCode, res.body).toBe(400);
      const details = res.json().details as Array<{ path: string; message: string }>;
      expect(
        details.some((d) => d.path.startsWith(path) && message.test(d.message)),
        res.body,
      ).toBe(true);
    };
    const at = "nodes[0].aggregates";
    await refused(
      { s: { function: "sum", by: "customer", window: "P1D" } },
      `${at}.s.field`,
      /required with sum/,
    );
    await refused(
      { c: { function: "count", field: "amount", by: "customer", window: "P1D" } },
      `${at}.c.field`,
      /only for sum/,
    );
    await refused(
      { d: { function: "countDistinct", by: "customer", window: "P1D" } },
      `${at}.d.distinct`,
      /required/,
    );
    await refused(
      { d: { function: "count", distinct: "iban", by: "customer", window: "P1D" } },
      `${at}.d.distinct`,
      /only for countDistinct/,
    );
    await refused({ w: { function: "count", by: "customer", window: "P1M" } }, `${at}.w.window`, /ISO 8601/);
    await refused(
      { w: { function: "count", by: "customer", window: "PT30S" } },
      `${at}.w.window`,
      /PT1M and P400D/,
    );
    await refused(
      { w: { function: "count", by: "customer", window: "P401D" } },
      `${at}.w.window`,
      /PT1M and P400D/,
    );
    await refused({ f: { function: "median", by: "customer", window: "P1D" } }, `${at}`, /./);
    await refused({ b: { function: "count", by: "shoe_size", window: "P1D" } }, `${at}`, /./);
    await refused(
      { t: { function: "count", by: "customer", window: "P1D", caseType: "Loan" } },
      `${at}`,
      /./,
    );
    await refused(
      { t: { function: "count", by: "customer", window: "P1D", decision: "maybe" } },
      `${at}`,
      /./,
    );
    await refused({ "bad-name": { function: "count", by: "customer", window: "P1D" } }, `${at}`, /./);
    await refused({}, "nodes[0].aggregates", /./);
    const many = Object.fromEntries(
      Array.from({ length: 21 }, (_, i) => [`f${i}`, { function: "count", by: "customer", window: "P1D" }]),
    );
    await refused(many, "nodes[0].aggregates", /./);
  });
});
