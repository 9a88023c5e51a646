import { describe, expect, it } from "vitest";
import { createAppContext, serviceMigrations } from "../src/context.js";
import type { WorkflowDefinition } from "../src/modules/workflows/workflow.types.js";
import { createLogger } from "../src/platform/logger.js";
import { migrate } from "../src/platform/migrate.js";
import { ADMIN_TOKEN, buildCheckedApp, testConfig } from "./support/app.js";
import { type Child, runTs } from "./support/children/process.js";
import { crashTestDatabase } from "./support/crash-db.js";
import { crashFeature } from "./support/crash-node.js";
import { createPartner } from "./support/fixtures.js";
import { featuresWithProbe } from "./support/probe-node.js";
import { createWorkflow, kycSubject } from "./support/workflows.js";

/** A node that kills its process for a payload with `crash: true`, then a decision. */
const crashingFlow: WorkflowDefinition = {
  inputSchema: { type: "object" },
  start: "maybe-crash",
  nodes: [
    { id: "maybe-crash", type: "crash", next: "done" },
    { id: "done", type: "decision", decision: "approved" },
  ] as unknown as WorkflowDefinition["nodes"],
};

const ORDINARY_PER_TENANT = 4;
const CRASH_LIMIT = 3;

const database = crashTestDatabase("cds-case-crash-");
const open = () => database.open();

/** The child's latest `progress <steps> <decided> <failed>` line, once it satisfies `done`. */
async function settled(
  child: Child,
  done: (decided: number, failed: number) => boolean,
): Promise<"done" | "exited"> {
  let exited = false;
  void child.exited.then(() => {
    exited = true;
  });
  const deadline = Date.now() + 120_000;
  for (;;) {
    const last = child
      .stdout()
      .split("\n")
      .filter((l) => /^progress \d+ \d+ \d+$/.test(l))
      .at(-1)
      ?.split(" ");
    if (last && done(Number(last[2]), Number(last[3]))) return "done";
    if (exited) return "exited";
    if (Date.now() > deadline)
      throw new Error(`cases did not settle; stdout:\n${child.stdout()}\n${child.stderr()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("a case whose run kills its worker process every time", () => {
  it(`is failed with case.failed after ${CRASH_LIMIT} crashes, and every other case is decided`, async () => {
    const db = await open();
    await migrate(db, serviceMigrations());
    const app = await buildCheckedApp(
      createAppContext(
        { config: testConfig({ dataDir: database.dataDir }), db, log: createLogger("silent") },
        [...featuresWithProbe, crashFeature],
      ),
    );
    const hostile = await createPartner(app);
    const other = await createPartner(app);
    const submit = async (partner: typeof hostile, payload: Record<string, unknown>) => {
      const res = await app.inject({
        method: "POST",
        url: "/cases",
        headers: partner.headers,
        payload: { workflowId: "crashing", type: "KYC", payload, subject: kycSubject },
      });
      expect(res.statusCode).toBe(201);
      return res.json().caseId as string;
    };
    await createWorkflow(app, hostile.tenantId, "crashing", crashingFlow);
    await createWorkflow(app, other.tenantId, "crashing", crashingFlow);
    // The poisoned case is accepted among ordinary ones, so that it is claimed in their batch.
    const ordinary: string[] = [];
    for (let i = 0; i < ORDINARY_PER_TENANT; i++) ordinary.push(await submit(hostile, { n: i }));
    const poisoned = await submit(hostile, { crash: true });
    for (let i = 0; i < ORDINARY_PER_TENANT; i++) ordinary.push(await submit(other, { n: i }));
    await app.close();
    await db.close();

    const env = {
      ...database.env(),
      CDS_ADMIN_TOKEN: ADMIN_TOKEN,
      CDS_JOB_LEASE_SECONDS: "1",
      CDS_JOB_POLL_MS: "100",
      CDS_CASE_CRASH_LIMIT: String(CRASH_LIMIT),
      CDS_LOG_LEVEL: "silent",
    };
    const total = ordinary.length + 1;
    const exits: Array<number | string> = [];
    // Each worker runs until the poisoned case kills it; a new one is started in its place, as a
    // supervisor would, until every case has an outcome.
    for (let run = 0; run < CRASH_LIMIT + 3; run++) {
      const child = runTs("test/support/children/engine-worker.ts", ["--crash-node"], env);
      const outcome = await settled(child, (decided, failed) => decided + failed === total);
      if (outcome === "done") {
        child.kill("SIGTERM");
        await child.exited;
        break;
      }
      exits.push(await child.exited);
    }
    expect(exits).toEqual(Array.from({ length: CRASH_LIMIT }, () => "SIGKILL"));

    const check = await open();
    try {
      const cases = await check.root
        .selectFrom("cases")
        .select(["id", "status", "error", "start_attempts"])
        .where("id", "in", [...ordinary, poisoned])
        .execute();
      const byId = new Map(cases.map((c) => [c.id, c]));
      expect(byId.get(poisoned)?.status).toBe("failed");
      expect(JSON.stringify(byId.get(poisoned)?.error)).toContain(
        `ended its worker process ${CRASH_LIMIT} times`,
      );
      for (const id of ordinary) expect(byId.get(id)?.status).toBe("decided");
      // Each ordinary case ran at most twice: once in the batch the crash took, once alone.
      for (const id of ordinary) expect(byId.get(id)?.start_attempts).toBeLessThanOrEqual(2);
      const events = await check.root
        .selectFrom("events")
        .select(["case_id", "event_type"])
        .where("case_id", "in", [...ordinary, poisoned])
        .execute();
      expect(events.filter((e) => e.case_id === poisoned).map((e) => e.event_type)).toEqual(["case.failed"]);
      expect(
        events
          .filter((e) => e.event_type === "case.decided")
          .map((e) => e.case_id)
          .sort(),
      ).toEqual([...ordinary].sort());
      const steps = await check.root
        .selectFrom("case_steps")
        .select(["status", "error"])
        .where("case_id", "=", poisoned)
        .execute();
      expect(steps).toEqual([
        { status: "failed", error: expect.objectContaining({ message: expect.any(String) }) },
      ]);
    } finally {
      await check.close();
    }
  }, 300_000);
});
