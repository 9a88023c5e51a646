import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "./support/app.js";
import { adminHeaders, createPartner } from "./support/fixtures.js";
import { waitFor } from "./support/jobs.js";
import { sample } from "./support/metrics.js";
import { configureWebhook, Receiver } from "./support/receiver.js";
import { amountScreen, createWorkflow, kycSubject, waitForCase } from "./support/workflows.js";

const METRICS_TOKEN = "metrics-token-0123456789";

let h: TestApp;
let receiver: Receiver;
beforeAll(async () => {
  h = await createTestApp({ metricsToken: METRICS_TOKEN });
  receiver = await Receiver.start();
});
afterAll(async () => {
  await receiver.close();
  await h.close();
});

const scrape = () => h.app.inject({ url: "/metrics", headers: { authorization: `Bearer ${METRICS_TOKEN}` } });

describe("GET /ready", () => {
  it("is 503 naming the missing worker until a worker reports, 200 while one does, 503 once it stops", async () => {
    const before = await h.app.inject({ url: "/ready" });
    expect(before.statusCode).toBe(503);
    expect(before.json()).toEqual({
      error: "no worker seen in the last 30 s: start one (CDS_ROLE=worker or all)",
      code: "unavailable",
    });

    const worker = await h.startWorker();
    const ready = await h.app.inject({ url: "/ready" });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toEqual({ status: "ready" });

    await worker.stop();
    expect((await h.app.inject({ url: "/ready" })).statusCode).toBe(503);
  });

  it("does not count a worker whose last report is older than 30 s", async () => {
    await sql`INSERT INTO worker_heartbeats (worker_id, host, pid, seen_at)
      VALUES ('crashed-worker', 'host', 1, now() - interval '31 seconds')`.execute(h.ctx.db.root);
    expect((await h.app.inject({ url: "/ready" })).statusCode).toBe(503);
    await sql`UPDATE worker_heartbeats SET seen_at = now() - interval '29 seconds'`.execute(h.ctx.db.root);
    expect((await h.app.inject({ url: "/ready" })).statusCode).toBe(200);
    await sql`DELETE FROM worker_heartbeats`.execute(h.ctx.db.root);
  });
});

describe("GET /metrics", () => {
  it("requires the metrics token when one is configured", async () => {
    const none = await h.app.inject({ url: "/metrics" });
    expect(none.statusCode).toBe(401);
    expect(none.json().code).toBe("unauthenticated");
    const wrong = await h.app.inject({
      url: "/metrics",
      headers: { authorization: "Bearer nope-nope-nope-nope" },
    });
    expect(wrong.statusCode).toBe(401);
    const right = await scrape();
    expect(right.statusCode).toBe(200);
    expect(right.headers["content-type"]).toMatch(/^text\/plain; version=0\.0\.4/);
  });

  it("counts HTTP requests by route pattern and status", async () => {
    const partner = await createPartner(h.app);
    const missing = "/cases/00000000-0000-4000-8000-000000000000";
    const labels = { method: "GET", route: "/cases/:caseId", status: "404" };
    const before = sample((await scrape()).body, "cds_http_requests_total", labels) ?? 0;
    for (let i = 0; i < 3; i++) await h.app.inject({ url: missing, headers: partner.headers });
    const after = sample((await scrape()).body, "cds_http_requests_total", labels);
    expect(after).toBe(before + 3);
  });

  it("reports the queue's depth and the age of its oldest due job by kind, from the database", async () => {
    await sql`INSERT INTO jobs (kind, payload, run_at) VALUES
      ('metrics.probe', '{}', now() - interval '90 seconds'),
      ('metrics.probe', '{}', now() - interval '10 seconds'),
      ('metrics.probe', '{}', now() + interval '1 hour')`.execute(h.ctx.db.root);
    const text = (await scrape()).body;
    expect(sample(text, "cds_jobs_queued", { kind: "metrics.probe", state: "ready" })).toBe(2);
    expect(sample(text, "cds_jobs_queued", { kind: "metrics.probe", state: "scheduled" })).toBe(1);
    const age = sample(text, "cds_jobs_oldest_ready_age_seconds", { kind: "metrics.probe" }) ?? 0;
    expect(age).toBeGreaterThanOrEqual(90);
    expect(age).toBeLessThan(600);
    await sql`DELETE FROM jobs WHERE kind = 'metrics.probe'`.execute(h.ctx.db.root);
    const cleared = (await scrape()).body;
    expect(sample(cleared, "cds_jobs_queued", { kind: "metrics.probe", state: "ready" })).toBeUndefined();
  });

  it("observes step runs, decision latency, webhook attempts by outcome and live workers", async () => {
    const worker = await h.startWorker();
    try {
      const partner = await createPartner(h.app);
      await createWorkflow(h.app, partner.tenantId, "screen", amountScreen);
      await configureWebhook(h.app, adminHeaders, partner.tenantId, { url: receiver.url("/ok") });
      const before = (await scrape()).body;
      const decisions = sample(before, "cds_case_decision_seconds_count", { decision: "approved" }) ?? 0;
      const succeeded = sample(before, "cds_webhook_attempts_total", { outcome: "succeeded" }) ?? 0;
      const steps =
        sample(before, "cds_job_run_seconds_count", { kind: "engine.start", outcome: "done" }) ?? 0;

      const submitted = await h.app.inject({
        method: "POST",
        url: "/cases",
        headers: partner.headers,
        payload: { workflowId: "screen", type: "KYC", payload: { amount: 5 }, subject: kycSubject },
      });
      await waitForCase(h.app, partner.headers, submitted.json().caseId);
      await receiver.waitFor(1, { path: "/ok" });
      await waitFor(
        async () =>
          (sample((await scrape()).body, "cds_webhook_attempts_total", { outcome: "succeeded" }) ?? 0) >
          succeeded,
      );

      const after = (await scrape()).body;
      expect(sample(after, "cds_case_decision_seconds_count", { decision: "approved" })).toBe(decisions + 1);
      expect(
        sample(after, "cds_job_run_seconds_count", { kind: "engine.start", outcome: "done" }),
      ).toBeGreaterThan(steps);
      expect(sample(after, "cds_workers_live")).toBe(1);
    } finally {
      await worker.stop();
    }
  });
});
