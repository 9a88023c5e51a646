import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "./support/app.js";
import { createPartner, type Partner } from "./support/fixtures.js";
import { createWorkflow, kycSubject, waitForCase } from "./support/workflows.js";

/** Decision 0029: evaluation threads run below the process's CPU priority (Linux). */

let h: TestApp;
let partner: Partner;

beforeAll(async () => {
  h = await createTestApp({ evaluationNiceness: 10 });
  await h.startWorker();
  partner = await createPartner(h.app);
});
afterAll(async () => h?.close());

/** A task's nice value: field 19 of its stat, counted after the parenthesised name. */
function niceOf(task: string): number {
  const stat = fs.readFileSync(`/proc/self/task/${task}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16]);
}

describe.skipIf(process.platform !== "linux")("evaluation threads", () => {
  it("run at CDS_EVALUATION_NICENESS below the process's priority, the event loop at its own", async () => {
    await createWorkflow(h.app, partner.tenantId, "long", {
      inputSchema: { type: "object" },
      start: "check",
      nodes: [
        { id: "check", type: "rules", rules: [{ when: "size(payload.s) > 3", next: "yes" }], default: "no" },
        { id: "yes", type: "decision", decision: "approved" },
        { id: "no", type: "decision", decision: "declined" },
      ],
    });
    // A string over 128 characters moves the rule's evaluation to a thread.
    const res = await h.app.inject({
      method: "POST",
      url: "/cases",
      headers: partner.headers,
      payload: { workflowId: "long", type: "KYC", payload: { s: "n".repeat(300) }, subject: kycSubject },
    });
    expect(res.statusCode, res.body).toBe(201);
    const done = await waitForCase(h.app, partner.headers, res.json().caseId);
    expect(done.result.decision.value).toBe("approved");

    const own = niceOf(String(process.pid));
    expect(own).toBeLessThan(19);
    const tasks = fs.readdirSync("/proc/self/task");
    const lowered = tasks.filter((t) => niceOf(t) === Math.min(19, own + 10));
    expect(lowered.length).toBeGreaterThanOrEqual(1);
    expect(lowered.length).toBeLessThan(tasks.length);
  });
});
