import { afterAll, beforeAll, expect, it } from "vitest";
import { LinkStatistics, linkTableSize } from "../src/modules/entities/link-statistics.js";
import { createTestApp, type TestApp } from "./support/app.js";
import { createPartner, type Partner } from "./support/fixtures.js";
import { waitFor } from "./support/jobs.js";
import { amountScreen, createWorkflow } from "./support/workflows.js";

// The links' statistics are taken each time their table has doubled (decision 0021, "The links'
// statistics, taken at each doubling"), by every worker process, on both databases.

let h: TestApp;
let partner: Partner;
let submitted = 0;

beforeAll(async () => {
  h = await createTestApp();
  partner = await createPartner(h.app);
  await createWorkflow(h.app, partner.tenantId, "screen", amountScreen);
});
afterAll(async () => {
  await h.close();
});

const size = () => linkTableSize(h.ctx.db);

/** Submits cases of new customers and IBANs, two links each, until the table has `pages`. */
async function growTo(pages: number) {
  while ((await size()).pages < pages) {
    for (let i = 0; i < 20; i++) {
      submitted += 1;
      const res = await h.app.inject({
        method: "POST",
        url: "/cases",
        headers: partner.headers,
        payload: {
          workflowId: "screen",
          type: "Transaction",
          eventTimestamp: new Date().toISOString(),
          payload: { amount: 1 },
          subject: {
            transaction: {
              amount: 10,
              currency: "EUR",
              parties: [
                {
                  role: "sender",
                  identifiers: [{ type: "external_customer_id", value: `customer-${submitted}` }],
                },
                { role: "receiver", identifiers: [{ type: "iban", value: `DE89370400440532${submitted}` }] },
              ],
            },
          },
        },
      });
      expect(res.statusCode, res.body).toBe(201);
    }
  }
}

it("takes the statistics once the table has grown to twice what they last counted, and not before", async () => {
  const statistics = new LinkStatistics(h.ctx.db, h.ctx.log, { everyMs: 60_000, firstPages: 2 });
  await growTo(1);
  expect((await size()).counted).toBe(0);
  expect(await statistics.look()).toBe(false); // below the first size

  await growTo(2);
  expect(await statistics.look()).toBe(true);
  const first = await size();
  expect(first.counted).toBe(first.pages);
  expect(await statistics.look()).toBe(false); // not grown since

  await growTo(2 * first.counted - 1);
  expect(await statistics.look()).toBe(false); // grown, not doubled
  await growTo(2 * first.counted);
  expect(await statistics.look()).toBe(true);
  expect((await size()).counted).toBeGreaterThanOrEqual(2 * first.counted);
});

it("is taken by the worker as cases arrive", async () => {
  const before = await size();
  await growTo(Math.max(8, 2 * before.counted));
  await h.startWorker();
  await waitFor(async () => (await size()).counted >= 8, 120_000);
  const after = await size();
  expect(after.counted).toBeGreaterThan(before.counted);
});
