import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WAITING_PER_TENANT } from "../src/modules/engine/evaluation-step.js";
import { pendingOnThreads, waitingForThreads } from "../src/modules/workflows/index.js";
import type { WorkflowDefinition } from "../src/modules/workflows/workflow.types.js";
import { createTestApp, type TestApp } from "./support/app.js";
import { createPartner, type Partner } from "./support/fixtures.js";
import { amountScreen, createWorkflow, eventsOf, kycSubject, waitForCase } from "./support/workflows.js";

/**
 * Decisions 0024 and 0029: an evaluation its estimate gets wrong ends at the deadline on a
 * worker thread, and a tenant whose evaluations each run to the deadline does not hold the
 * other tenants' evaluations behind its own. The node budget here is far above what the
 * deadline allows, as an estimate that is wrong would be: a comprehension of 10,000 × 10,000
 * elements is charged within it, and takes seconds on any machine.
 */

/** Long enough that the other tenant's evaluations (milliseconds) finish within it on a loaded machine. */
const DEADLINE_MS = 1_500;
const DEADLINE_ERROR = `did not finish within the evaluation deadline of ${DEADLINE_MS} ms`;
let h: TestApp;
let hostile: Partner;
let ordinary: Partner;

function oneRule(when: string): WorkflowDefinition {
  return {
    inputSchema: { type: "object" },
    start: "check",
    nodes: [
      { id: "check", type: "rules", rules: [{ when, next: "yes" }], default: "no" },
      { id: "yes", type: "decision", decision: "approved" },
      { id: "no", type: "decision", decision: "declined" },
    ],
  };
}

/** 10^8 iterations: several seconds on a thread, past the deadline however fast the machine. */
const spin = { l: Array.from({ length: 10_000 }, (_, i) => i) };
/** Past the 1,024 elements the event loop handles, so it runs on a thread: milliseconds there. */
const light = { l: Array.from({ length: 2_000 }, (_, i) => i) };

beforeAll(async () => {
  h = await createTestApp({ evaluationDeadlineMs: DEADLINE_MS, evaluationBudget: 1_000_000_000_000 });
  await h.startWorker();
  hostile = await createPartner(h.app);
  ordinary = await createPartner(h.app);
  await createWorkflow(
    h.app,
    hostile.tenantId,
    "spin",
    oneRule("payload.l.all(x, payload.l.all(y, y >= 0))"),
  );
  await createWorkflow(h.app, ordinary.tenantId, "screen", amountScreen);
  await createWorkflow(h.app, ordinary.tenantId, "light", oneRule("payload.l.all(x, x >= 0)"));
});
afterAll(async () => h?.close());

async function created(partner: Partner, workflowId: string, payload: unknown): Promise<string> {
  const res = await h.app.inject({
    method: "POST",
    url: "/cases",
    headers: partner.headers,
    payload: { workflowId, type: "KYC", payload, subject: kycSubject },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().caseId as string;
}

async function statusOf(partner: Partner, caseId: string): Promise<string> {
  const res = await h.app.inject({ url: `/cases/${caseId}`, headers: partner.headers });
  expect(res.statusCode).toBe(200);
  return res.json().status as string;
}

const inFlight = (status: string) => status === "received" || status === "running";

async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`still not so after ${timeoutMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("an evaluation its estimate gets wrong", () => {
  it("fails its case at the deadline, while another tenant's case is decided and /health answers", async () => {
    const slow = await created(hostile, "spin", spin);
    const other = await created(ordinary, "screen", { amount: 50 });

    let healthWhileRunning = 0;
    for (;;) {
      const health = await h.app.inject({ url: "/health" });
      expect(health.statusCode).toBe(200);
      if (!inFlight(await statusOf(hostile, slow))) break;
      healthWhileRunning++;
      await new Promise((r) => setTimeout(r, 10));
    }
    // The event loop answered while the evaluation ran: it ran elsewhere.
    expect(healthWhileRunning).toBeGreaterThan(0);

    const failed = await waitForCase(h.app, hostile.headers, slow);
    expect(failed.status).toBe("failed");
    const events = await eventsOf(h.ctx, slow);
    expect(events.map((e) => e.event_type)).toEqual(["case.failed"]);
    expect(JSON.stringify(events[0]?.payload)).toContain(DEADLINE_ERROR);
    const decided = await waitForCase(h.app, ordinary.headers, other);
    expect(decided.status).toBe("decided");
    expect(decided.result.decision.value).toBe("approved");
  });
});

describe("tenants take turns on the evaluation threads", () => {
  it("while each of a tenant's evaluations runs to the deadline, another tenant's are all decided before more than a few of the first finish", async () => {
    const spinning = [];
    for (let i = 0; i < 8; i++) spinning.push(await created(hostile, "spin", spin));
    // Its evaluations have reached the threads before the other tenant's are submitted: with
    // one queue in order, the other tenant's would wait behind all eight, each to the deadline.
    await until(
      () => pendingOnThreads(hostile.tenantId) > 0,
      "the spinning tenant's evaluations are on the threads",
    );

    // How many of its evaluations wait for a thread (not on one), at most: the rest of its jobs
    // are given back to the queue rather than wait in worker slots.
    let mostWaiting = 0;
    const sampler = setInterval(() => {
      mostWaiting = Math.max(mostWaiting, waitingForThreads(hostile.tenantId));
    }, 5);
    const lights = [];
    for (let i = 0; i < 6; i++) lights.push(await created(ordinary, "light", light));
    try {
      for (const id of lights) {
        const done = await waitForCase(h.app, ordinary.headers, id, undefined, 60_000);
        expect(done.status, JSON.stringify(done.error)).toBe("decided");
        expect(done.result.decision.value).toBe("approved");
      }
    } finally {
      clearInterval(sampler);
    }
    expect(mostWaiting).toBeGreaterThan(0);
    expect(mostWaiting).toBeLessThanOrEqual(WAITING_PER_TENANT);
    const finishedFirst = (await Promise.all(spinning.map((id) => statusOf(hostile, id)))).filter(
      (s) => !inFlight(s),
    ).length;
    // Half of them at most (on a quiet machine, one per thread it held when they came and the one
    // after it; a loaded one may let another round by): with one queue in order, the other
    // tenant's would have waited for all eight.
    expect(finishedFirst).toBeLessThanOrEqual(spinning.length / 2);

    // Every one of the spinning tenant's cases ran, each to the deadline, none given up.
    for (const id of spinning) {
      const failed = await waitForCase(h.app, hostile.headers, id, undefined, 120_000);
      expect(failed.status).toBe("failed");
      const events = await eventsOf(h.ctx, id);
      expect(JSON.stringify(events[0]?.payload)).toContain(DEADLINE_ERROR);
    }
    expect(pendingOnThreads(hostile.tenantId)).toBe(0);
    // Eight deadlines in turns, and the waits above: what bounds it is the conditions, not this.
  }, 300_000);
});
