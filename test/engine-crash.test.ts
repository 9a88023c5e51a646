import { describe, expect, it } from "vitest";
import { createAppContext, serviceMigrations } from "../src/context.js";
import type { WorkflowDefinition } from "../src/modules/workflows/workflow.types.js";
import { createLogger } from "../src/platform/logger.js";
import { migrate } from "../src/platform/migrate.js";
import { ADMIN_TOKEN, buildCheckedApp, testConfig } from "./support/app.js";
import { type Child, runTs } from "./support/children/process.js";
import { crashTestDatabase } from "./support/crash-db.js";
import { createPartner } from "./support/fixtures.js";
import { featuresWithProbe } from "./support/probe-node.js";
import { createWorkflow, kycSubject } from "./support/workflows.js";

const CASES = 40;
const CHAIN = 10;
const STEPS_PER_CASE = CHAIN + 2;

/**
 * Five rules nodes, a node that calls outside the service (its own step, outside the case lock),
 * five more rules nodes, then a decision: twelve steps per case, in two transactions.
 */
const longFlow: WorkflowDefinition = {
  inputSchema: { type: "object" },
  start: "n0",
  nodes: [
    ...Array.from({ length: CHAIN }, (_, i) => ({
      id: `n${i}`,
      type: "rules" as const,
      rules: [{ when: `payload.n > ${1000 + i}`, next: "done" }],
      default: i === CHAIN - 1 ? "done" : i === CHAIN / 2 - 1 ? "call" : `n${i + 1}`,
    })),
    { id: "call", type: "probe", next: `n${CHAIN / 2}` },
    { id: "done", type: "decision", decision: "approved", output: { visited: `size(nodes)` } },
  ],
};

interface Progress {
  steps: number;
  decided: number;
}

/** Waits for the child's latest progress line to satisfy the condition, and returns it. */
async function progressReaching(
  child: Child,
  done: (p: Progress) => boolean,
  timeoutMs = 90_000,
): Promise<Progress> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const lines = child
      .stdout()
      .split("\n")
      .filter((l) => /^progress \d+ \d+ \d+$/.test(l));
    const last = lines.at(-1)?.split(" ");
    if (last) {
      const progress = { steps: Number(last[1]), decided: Number(last[2]) };
      if (done(progress)) return progress;
    }
    if (Date.now() > deadline)
      throw new Error(`no progress as expected; stdout:\n${child.stdout()}\n${child.stderr()}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const database = crashTestDatabase("cds-engine-crash-");
const open = () => database.open();

describe("a worker killed with SIGKILL in the middle of workflows", () => {
  it("leaves every case decided exactly once after restarts", async () => {
    // Provision and submit through the real app, then hand the database to the workers.
    const db = await open();
    await migrate(db, serviceMigrations());
    const config = testConfig({ dataDir: database.dataDir });
    const app = await buildCheckedApp(
      createAppContext({ config, db, log: createLogger("silent") }, featuresWithProbe),
    );
    const partner = await createPartner(app);
    await createWorkflow(app, partner.tenantId, "long", longFlow);
    const caseIds: string[] = [];
    for (let i = 0; i < CASES; i++) {
      const res = await app.inject({
        method: "POST",
        url: "/cases",
        headers: partner.headers,
        payload: { workflowId: "long", type: "KYC", payload: { n: i }, subject: kycSubject },
      });
      expect(res.statusCode).toBe(201);
      caseIds.push(res.json().caseId);
    }
    await app.close();
    await db.close();

    const env = {
      ...database.env(),
      CDS_ADMIN_TOKEN: ADMIN_TOKEN,
      CDS_JOB_LEASE_SECONDS: "2",
      CDS_JOB_POLL_MS: "100",
      CDS_WORKER_CONCURRENCY: "8",
      CDS_LOG_LEVEL: "silent",
    };
    const total = CASES * STEPS_PER_CASE;
    const killedAt: number[] = [];
    for (const threshold of [40, 160, 280]) {
      const child = runTs("test/support/children/engine-worker.ts", [], env);
      const steps = await progressReaching(child, (p) => p.steps >= threshold);
      child.kill("SIGKILL");
      await child.exited;
      killedAt.push(steps.steps);
    }
    // The kills landed mid-work: some steps done, not all of them.
    expect(killedAt[0]).toBeGreaterThan(0);
    expect(killedAt.at(-1)).toBeLessThan(total);

    const last = runTs("test/support/children/engine-worker.ts", [], env);
    await progressReaching(last, (p) => p.steps === total && p.decided === CASES);
    last.kill("SIGTERM");
    await last.exited;

    const check = await open();
    try {
      const cases = await check.root
        .selectFrom("cases")
        .select(["id", "status", "decision_history", "step_seq"])
        .where("id", "in", caseIds)
        .execute();
      expect(cases).toHaveLength(CASES);
      for (const c of cases) {
        expect(c.status).toBe("decided");
        expect(c.decision_history).toHaveLength(1);
        expect(c.step_seq).toBe(STEPS_PER_CASE);
      }
      const events = await check.root
        .selectFrom("events")
        .select(["case_id", "event_type"])
        .where("case_id", "in", caseIds)
        .execute();
      expect(events.filter((e) => e.event_type === "case.decided")).toHaveLength(CASES);
      expect(new Set(events.map((e) => e.case_id)).size).toBe(CASES);
      const steps = await check.root.selectFrom("case_steps").select(["case_id", "seq", "node_id"]).execute();
      expect(steps).toHaveLength(total);
      for (const id of caseIds) {
        const mine = steps.filter((s) => s.case_id === id).sort((a, b) => a.seq - b.seq);
        expect(mine.map((s) => s.seq)).toEqual(Array.from({ length: STEPS_PER_CASE }, (_, i) => i + 1));
        expect(new Set(mine.map((s) => s.node_id)).size).toBe(STEPS_PER_CASE);
      }
    } finally {
      await check.close();
    }
  }, 240_000);
});
