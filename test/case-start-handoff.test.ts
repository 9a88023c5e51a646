import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JobWorker } from "../src/platform/jobs.js";
import { metricsRegistry } from "../src/platform/metrics.js";
import { createTestApp, type TestApp } from "./support/app.js";
import { SERVER_URL } from "./support/db.js";
import { adminHeaders, createKey, createPartner, type Partner } from "./support/fixtures.js";
import { waitFor } from "./support/jobs.js";
import { sample } from "./support/metrics.js";
import { amountScreen, createWorkflow, kycSubject, waitForCase } from "./support/workflows.js";

// Decision 0028: a submission takes its workflow's current version from what the process has
// seen, and its insert confirms it; the process's own starter gets the cases it accepts already
// claimed, and hands back those it never began when it stops.

let h: TestApp;

beforeAll(async () => {
  // A lease longer than any test: a case left claimed by a stopped starter would never run here.
  h = await createTestApp({ jobLeaseSeconds: 3600 });
});
afterAll(() => h.close());

async function submit(partner: Partner, amount = 10): Promise<string> {
  const res = await h.app.inject({
    method: "POST",
    url: "/cases",
    headers: partner.headers,
    payload: { workflowId: "screen", type: "KYC", payload: { amount }, subject: kycSubject },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().caseId;
}

async function versionOf(partner: Partner, caseId: string): Promise<number> {
  const res = await h.app.inject({ method: "GET", url: `/cases/${caseId}`, headers: partner.headers });
  expect(res.statusCode).toBe(200);
  return res.json().workflowVersion;
}

async function publish(tenantId: string, version: number): Promise<void> {
  const res = await h.app.inject({
    method: "POST",
    url: `/admin/tenants/${tenantId}/workflows/screen/versions/${version}/publish`,
    headers: adminHeaders,
  });
  expect(res.statusCode, res.body).toBe(200);
}

describe("the current version", () => {
  it("is the one published last, though the process had seen another as current", async () => {
    const partner = await createPartner(h.app);
    await createWorkflow(h.app, partner.tenantId, "screen", amountScreen);
    // The process now knows version 1 as current.
    expect(await versionOf(partner, await submit(partner))).toBe(1);
    expect(await versionOf(partner, await submit(partner))).toBe(1);

    // Publishing version 2 tells this process's memory nothing (as a publish through another
    // process would not): the insert finds version 1 no longer current and the case goes on 2.
    await createWorkflow(h.app, partner.tenantId, "screen", amountScreen);
    expect(await versionOf(partner, await submit(partner))).toBe(2);
    expect(await versionOf(partner, await submit(partner))).toBe(2);

    // Publishing version 1 again makes it current again.
    await publish(partner.tenantId, 1);
    expect(await versionOf(partner, await submit(partner))).toBe(1);
  });

  it("answers an idempotent resubmission with its first case after a publish", async () => {
    const partner = await createPartner(h.app);
    await createWorkflow(h.app, partner.tenantId, "screen", amountScreen);
    const body = { workflowId: "screen", type: "KYC", payload: { amount: 5 }, subject: kycSubject };
    const first = await h.app.inject({
      method: "POST",
      url: "/cases",
      headers: partner.headers,
      payload: { ...body, idempotencyKey: "order-1" },
    });
    expect(first.statusCode, first.body).toBe(201);
    await createWorkflow(h.app, partner.tenantId, "screen", amountScreen);
    const again = await h.app.inject({
      method: "POST",
      url: "/cases",
      headers: partner.headers,
      payload: { ...body, idempotencyKey: "order-1" },
    });
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json().caseId).toBe(first.json().caseId);
    expect(await versionOf(partner, first.json().caseId)).toBe(1);
  });
});

describe("an API key let in from what the process saw of it", () => {
  async function revoke(partner: Partner): Promise<void> {
    const res = await h.app.inject({
      method: "DELETE",
      url: `/admin/tenants/${partner.tenantId}/api-keys/${partner.keyId}`,
      headers: adminHeaders,
    });
    expect(res.statusCode, res.body).toBe(204);
  }

  const submission = { workflowId: "screen", type: "KYC", payload: { amount: 5 }, subject: kycSubject };

  it("is refused on the next submission once deleted, whatever that submission would have got", async () => {
    const partner = await createPartner(h.app);
    await createWorkflow(h.app, partner.tenantId, "screen", amountScreen);
    const others = [await createKey(h.app, partner.tenantId), await createKey(h.app, partner.tenantId)];
    // Each key has been seen live by this process.
    for (const p of [partner, ...others]) await submit(p);
    const first = await h.app.inject({
      method: "POST",
      url: "/cases",
      headers: others[1]?.headers,
      payload: { ...submission, idempotencyKey: "again" },
    });
    expect(first.statusCode, first.body).toBe(201);
    for (const p of [partner, ...others]) await revoke(p);

    // A new case: refused by the insert itself.
    const created = await h.app.inject({
      method: "POST",
      url: "/cases",
      headers: partner.headers,
      payload: submission,
    });
    expect(created.statusCode, created.body).toBe(401);
    expect(created.json()).toEqual({ error: "unknown API key", code: "unauthenticated" });
    // A body the service refuses: 401, not 400.
    const invalid = await h.app.inject({
      method: "POST",
      url: "/cases",
      headers: others[0]?.headers,
      payload: { ...submission, payload: {} },
    });
    expect(invalid.statusCode, invalid.body).toBe(401);
    // An idempotent resubmission: 401, not the first case.
    const replay = await h.app.inject({
      method: "POST",
      url: "/cases",
      headers: others[1]?.headers,
      payload: { ...submission, idempotencyKey: "again" },
    });
    expect(replay.statusCode, replay.body).toBe(401);
    expect(replay.body).not.toContain(first.json().caseId);

    const cases = await h.ctx.db.root
      .selectFrom("cases")
      .select((eb) => eb.fn.countAll<string>().as("n"))
      .where("tenant_id", "=", partner.tenantId)
      .executeTakeFirstOrThrow();
    expect(Number(cases.n)).toBe(4);
  });
});

describe("the hand-off to the process's own starter", () => {
  it("runs every case once, its starter stopped right after a burst or not", async () => {
    const partner = await createPartner(h.app);
    await createWorkflow(h.app, partner.tenantId, "screen", amountScreen);

    // Cases accepted while no starter runs are left to any: unclaimed, no run counted.
    const waiting = await submit(partner);
    const row = await h.ctx.db.root
      .selectFrom("cases")
      .select(["status", "start_attempts", "start_claimed_until"])
      .where("id", "=", waiting)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ status: "received", start_attempts: 0, start_claimed_until: null });

    // A burst accepted while a starter runs, which is stopped as soon as the last is accepted:
    // whatever it held and had not begun goes back to the queue with no run counted, and the
    // next starter runs it at once (the lease here would keep a case held for an hour).
    let worker: JobWorker = await h.startWorker();
    const ids = [waiting];
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let i = 0; i < 25; i++) ids.push(await submit(partner, i * 10));
      }),
    );
    await worker.stop();
    const held = await h.ctx.db.root
      .selectFrom("cases")
      .select((eb) => eb.fn.countAll<string>().as("n"))
      .where("status", "=", "received")
      .where("start_claimed_until", "is not", null)
      .executeTakeFirstOrThrow();
    expect(Number(held.n)).toBe(0);

    worker = await h.startWorker();
    for (const id of ids) {
      const kase = await waitForCase(h.app, partner.headers, id, undefined, 60_000);
      expect(kase.status, id).toBe("decided");
    }
    await worker.stop();
    const runs = await h.ctx.db.root
      .selectFrom("cases")
      .select("start_attempts")
      .where("id", "in", ids)
      .execute();
    expect(runs.map((r) => r.start_attempts)).toEqual(ids.map(() => 1));
  });

  // On PostgreSQL the starter can be held deterministically: a transaction of the test's own
  // keeps the steps' table locked, so every batch a lane takes waits at its commit, and the
  // cases accepted meanwhile stay in the starter's hands until it is stopped. Another keeps the
  // heartbeats' table locked from before the stop until the starter has settled: a worker that
  // told its parts to stop only after removing its heartbeat's row (a statement, which a busy
  // pool can hold up) went on taking cases meanwhile, and gave none back.
  it.skipIf(!SERVER_URL)(
    "gives back every case in hand and not begun when stopped while its batches are held",
    async () => {
      const partner = await createPartner(h.app);
      await createWorkflow(h.app, partner.tenantId, "screen", amountScreen);
      // Each lock in a session of its own, as another process would hold it; released by its commit.
      const hold = async (table: string) => {
        const session = new pg.Client({ connectionString: h.database.url });
        await session.connect();
        await session.query("BEGIN");
        await session.query(`LOCK TABLE ${table} IN EXCLUSIVE MODE`);
        return async () => {
          await session.query("COMMIT");
          await session.end();
        };
      };
      const releaseSteps = await hold("case_steps");
      const worker = await h.startWorker();
      // More than the lanes can hold in their batches (4 × 64): the rest waits in hand.
      const ids: string[] = [];
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          for (let i = 0; i < 40; i++) ids.push(await submit(partner, i));
        }),
      );
      const releaseHeartbeats = await hold("worker_heartbeats");
      const stopping = worker.stop();
      await releaseSteps();
      const states = () =>
        h.ctx.db.root
          .selectFrom("cases")
          .select(["status", "start_attempts", "start_claimed_until"])
          .where("id", "in", ids)
          .execute();
      // Settled: each case decided, or back in the queue, unclaimed.
      await waitFor(
        async () =>
          (await states()).every(
            (s) => s.status === "decided" || (s.status === "received" && s.start_claimed_until === null),
          ),
        60_000,
      );
      await releaseHeartbeats();
      await stopping;

      const waiting = (await states()).filter((s) => s.status === "received");
      // Some were never begun, and every one of them is back in the queue with no run counted.
      expect(waiting.length).toBeGreaterThan(0);
      expect(waiting.filter((s) => s.start_attempts !== 0 || s.start_claimed_until !== null)).toEqual([]);

      const next = await h.startWorker();
      for (const id of ids) {
        expect((await waitForCase(h.app, partner.headers, id, undefined, 60_000)).status).toBe("decided");
      }
      await next.stop();
    },
    120_000,
  );
});

describe("a case handed over with its row", () => {
  // The starter runs a handed case from the row its insert wrote, neither read nor locked; its
  // write checks that the case still waits to start with the run the insert counted. Another
  // session stands in for a second starter that claimed the case once the lease ran out.
  it.skipIf(!SERVER_URL)(
    "is not written when it was claimed again meanwhile, and then runs once",
    async () => {
      const partner = await createPartner(h.app);
      await createWorkflow(h.app, partner.tenantId, "screen", amountScreen);
      const failedStarts = async () =>
        sample(await metricsRegistry.metrics(), "cds_job_run_seconds_count", {
          kind: "engine.start",
          outcome: "failed",
        }) ?? 0;
      const before = await failedStarts();
      const worker = await h.startWorker();
      const other = new pg.Client({ connectionString: h.database.url });
      await other.connect();
      try {
        // The batch's write waits behind this lock, with the case unlocked.
        await other.query("BEGIN");
        await other.query("LOCK TABLE case_steps IN EXCLUSIVE MODE");
        const caseId = await submit(partner);
        await waitFor(async () => {
          const { rows } = await other.query(
            "SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'case_steps' AND NOT l.granted",
          );
          return rows.length > 0;
        });
        // Claimed again, as a second starter would after the lease: a run counted, a lease of an hour.
        const claimed = await other.query(
          "UPDATE cases SET start_attempts = start_attempts + 1, start_claimed_until = now() + interval '1 hour' WHERE id = $1 AND status = 'received' RETURNING start_attempts",
          [caseId],
        );
        expect(claimed.rows).toEqual([{ start_attempts: 2 }]);
        await other.query("COMMIT");

        // The batch is undone, and its case, read and locked alone, is no longer this starter's.
        await waitFor(async () => (await failedStarts()) > before);
        const steps = await h.ctx.db.root
          .selectFrom("case_steps")
          .select("seq")
          .where("case_id", "=", caseId)
          .execute();
        expect(steps).toEqual([]);
        const waiting = await h.ctx.db.root
          .selectFrom("cases")
          .select(["status", "start_attempts"])
          .where("id", "=", caseId)
          .executeTakeFirstOrThrow();
        expect(waiting).toEqual({ status: "received", start_attempts: 2 });

        // The other claim's lease runs out: the case runs again, once.
        await other.query(
          "UPDATE cases SET start_claimed_until = now() - interval '1 second' WHERE id = $1",
          [caseId],
        );
        const decided = await waitForCase(h.app, partner.headers, caseId);
        expect(decided.status).toBe("decided");
        const written = await h.ctx.db.root
          .selectFrom("case_steps")
          .select("seq")
          .where("case_id", "=", caseId)
          .orderBy("seq")
          .execute();
        expect(written.map((s) => s.seq)).toEqual([1, 2]);
        const events = await h.ctx.db.root
          .selectFrom("webhook_deliveries")
          .select("event_type")
          .where("case_id", "=", caseId)
          .execute();
        expect(events.map((e) => e.event_type)).toEqual(["case.decided"]);
      } finally {
        await other.end();
        await worker.stop();
      }
    },
  );
});

describe("a handed case's documents", () => {
  it("are decided on as stored: a number JSON cannot write is the null the record shows", async () => {
    const partner = await createPartner(h.app);
    await createWorkflow(h.app, partner.tenantId, "screen", {
      inputSchema: { type: "object" },
      start: "screen",
      nodes: [
        {
          id: "screen",
          type: "rules",
          rules: [{ when: "payload.amount == null", next: "stored" }],
          default: "parsed",
        },
        { id: "stored", type: "decision", decision: "approved" },
        { id: "parsed", type: "decision", decision: "in_review" },
      ],
    });
    const worker = await h.startWorker();
    try {
      // 1e309 parses to Infinity, which the table stores (and the record shows) as null.
      const res = await h.app.inject({
        method: "POST",
        url: "/cases",
        headers: { ...partner.headers, "content-type": "application/json" },
        payload: `{"workflowId":"screen","type":"KYC","payload":{"amount":1e309},"subject":${JSON.stringify(kycSubject)}}`,
      });
      expect(res.statusCode, res.body).toBe(201);
      const record = await waitForCase(h.app, partner.headers, res.json().caseId);
      expect(record.payload).toEqual({ amount: null });
      expect(record.status, JSON.stringify(record)).toBe("decided");
      expect(record.result.decision.value).toBe("approved");
    } finally {
      await worker.stop();
    }
  });
});
