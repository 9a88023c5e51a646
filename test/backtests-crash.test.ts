import { describe, expect, it } from "vitest";
import { createAppContext, serviceMigrations } from "../src/context.js";
import type { WorkflowDefinition } from "../src/modules/workflows/workflow.types.js";
import { createLogger } from "../src/platform/logger.js";
import { migrate } from "../src/platform/migrate.js";
import { ADMIN_TOKEN, buildCheckedApp, testConfig } from "./support/app.js";
import { pastCases } from "./support/backtests.js";
import { type Child, runTs } from "./support/children/process.js";
import { crashTestDatabase } from "./support/crash-db.js";
import { adminHeaders, createPartner } from "./support/fixtures.js";
import { amountScreen, createWorkflow } from "./support/workflows.js";

const CASES = 5000;

function screenAt(threshold: number): WorkflowDefinition {
  const wf = structuredClone(amountScreen);
  (wf.nodes[0] as Record<string, unknown>).rules = [
    { when: `payload.amount > ${threshold}`, next: "review" },
  ];
  return wf;
}

/** Waits for the child's latest progress line to satisfy the condition, and returns it. */
async function progressReaching(
  child: Child,
  done: (p: { done: number; status: string }) => boolean,
  timeoutMs = 180_000,
): Promise<{ done: number; status: string }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const last = child
      .stdout()
      .split("\n")
      .filter((l) => /^progress \d+ \w+$/.test(l))
      .at(-1)
      ?.split(" ");
    if (last) {
      const progress = { done: Number(last[1]), status: last[2] as string };
      if (done(progress)) return progress;
    }
    if (Date.now() > deadline)
      throw new Error(`no progress as expected; stdout:\n${child.stdout().slice(-2000)}\n${child.stderr()}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const database = crashTestDatabase("cds-backtest-crash-");
const open = () => database.open();

describe("a backtest's worker killed with SIGKILL in the middle of 5,000 cases", () => {
  it("resumes after each kill and counts every case once", async () => {
    const db = await open();
    await migrate(db, serviceMigrations());
    const config = testConfig({ dataDir: database.dataDir });
    const app = await buildCheckedApp(createAppContext({ config, db, log: createLogger("silent") }));
    const partner = await createPartner(app);
    await createWorkflow(app, partner.tenantId, "pay", screenAt(1000));
    await pastCases(db, partner.tenantId, CASES);
    await createWorkflow(app, partner.tenantId, "pay", screenAt(500), { publish: false });
    const started = await app.inject({
      method: "POST",
      url: `/admin/tenants/${partner.tenantId}/backtests`,
      headers: adminHeaders,
      payload: {
        workflowId: "pay",
        version: 2,
        from: new Date(Date.now() - 86_400_000).toISOString(),
        to: new Date(Date.now() + 60_000).toISOString(),
      },
    });
    expect(started.statusCode, started.body).toBe(202);
    const backtestId = started.json().backtestId as string;
    await app.close();
    await db.close();

    const env = {
      ...database.env(),
      CDS_ADMIN_TOKEN: ADMIN_TOKEN,
      CDS_JOB_LEASE_SECONDS: "2",
      CDS_JOB_POLL_MS: "100",
      CDS_LOG_LEVEL: "silent",
      BACKTEST_ID: backtestId,
    };
    const killedAt: number[] = [];
    for (const threshold of [1, 1500]) {
      const child = runTs("test/support/children/backtest-worker.ts", [], env);
      const progress = await progressReaching(child, (p) => p.done >= threshold);
      child.kill("SIGKILL");
      await child.exited;
      killedAt.push(progress.done);
    }
    // The kills landed in the middle: some cases replayed, not all of them.
    expect(killedAt[0]).toBeGreaterThan(0);
    expect(killedAt.at(-1)).toBeLessThan(CASES);

    const last = runTs("test/support/children/backtest-worker.ts", [], env);
    await progressReaching(last, (p) => p.status !== "running");
    last.kill("SIGTERM");
    await last.exited;

    const check = await open();
    try {
      const row = await check.root
        .selectFrom("backtests")
        .selectAll()
        .where("id", "=", backtestId)
        .executeTakeFirstOrThrow();
      expect(row).toMatchObject({ status: "completed", total: CASES, done: CASES });
      // amount = i % 2000 over 5,000 cases: 0–500 stay approved, 501–1000 go to review, the rest stay in review.
      expect(row.summary).toMatchObject({
        decisions: { approved: { approved: 1503, in_review: 1499 }, in_review: { in_review: 1998 } },
        changed: 1499,
        unchanged: 3501,
        needsInput: 0,
        errors: 0,
        nodes: {
          screen: { reached: CASES, reachedBefore: CASES },
          approve: { reached: 1503, reachedBefore: 3002 },
          review: { reached: 3497, reachedBefore: 1998 },
        },
      });
      const rows = await check.root
        .selectFrom("backtest_cases")
        .select(["case_id", "changed", "after"])
        .where("backtest_id", "=", backtestId)
        .execute();
      expect(rows).toHaveLength(CASES);
      expect(new Set(rows.map((r) => r.case_id)).size).toBe(CASES);
      expect(rows.filter((r) => r.after === null)).toHaveLength(0);
      expect(rows.filter((r) => r.changed)).toHaveLength(1499);
      // Nothing of the cases was written.
      const touched = await check.root
        .selectFrom("cases")
        .select((eb) => eb.fn.countAll<string>().as("n"))
        .where("tenant_id", "=", partner.tenantId)
        .where("step_seq", "<>", 2)
        .executeTakeFirstOrThrow();
      expect(Number(touched.n)).toBe(0);
    } finally {
      await check.close();
    }
  }, 300_000);
});
