import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SumsubSimulator } from "../src/modules/providers/brokers/sumsub/sumsub.simulator.js";
import type { RunningSimulator } from "../src/modules/providers/simulator.js";
import type { Db } from "../src/platform/db/index.js";
import { ADMIN_TOKEN } from "./support/app.js";
import { type Child, runTs } from "./support/children/process.js";
import { crashTestDatabase } from "./support/crash-db.js";
import { SUMSUB_CREDENTIALS, SUMSUB_WEBHOOK_SECRET } from "./support/providers.js";

const CASES = 3;

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const database = crashTestDatabase("cds-providers-crash-");
let sim: SumsubSimulator;
let simServer: RunningSimulator;

beforeAll(async () => {
  sim = new SumsubSimulator({ ...SUMSUB_CREDENTIALS, webhookSecret: SUMSUB_WEBHOOK_SECRET });
  simServer = await sim.listen(0);
});
afterAll(async () => {
  await simServer.close();
});

describe("a service killed with SIGKILL between its vendor calls and their commit", () => {
  it("leaves exactly one applicant per customer and one decision per case after the restart", async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const env = {
      ...database.env(),
      CDS_ADMIN_TOKEN: ADMIN_TOKEN,
      PORT: String(port),
      HOST: "127.0.0.1",
      CDS_JOB_LEASE_SECONDS: "2",
      CDS_JOB_POLL_MS: "100",
      CDS_LOG_LEVEL: "info",
    };
    const start = async (): Promise<Child> => {
      const child = runTs("src/main.ts", ["serve"], env);
      await child.line(/case decisioning service started/);
      return child;
    };
    const call = async (
      method: string,
      url: string,
      body?: unknown,
      headers: Record<string, string> = {},
    ) => {
      const res = await fetch(`${base}${url}`, {
        method,
        headers: {
          authorization: `Bearer ${ADMIN_TOKEN}`,
          ...(body ? { "content-type": "application/json" } : {}),
          ...headers,
        },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      const text = await res.text();
      if (res.status >= 300) throw new Error(`${method} ${url} answered ${res.status}: ${text}`);
      return text ? JSON.parse(text) : undefined;
    };

    let child = await start();
    const { tenantId } = await call("POST", "/admin/tenants", { name: "Crash Bank" });
    const { key } = await call("POST", `/admin/tenants/${tenantId}/api-keys`, {
      name: "k",
      scopes: ["cases:write", "cases:read", "cases:callback"],
    });
    const partner = { "x-api-key": key };
    const provider = await call("PUT", `/admin/tenants/${tenantId}/providers/sumsub`, {
      baseUrl: simServer.url,
      credentials: SUMSUB_CREDENTIALS,
      webhookSecret: SUMSUB_WEBHOOK_SECRET,
    });
    sim.setWebhook(provider.inboundWebhookUrl, SUMSUB_WEBHOOK_SECRET);
    const { version } = await call("POST", `/admin/tenants/${tenantId}/workflows/kyc/versions`, {
      inputSchema: { type: "object" },
      start: "idv",
      nodes: [
        {
          id: "idv",
          type: "provider",
          provider: "sumsub",
          config: { levelName: "basic-kyc-level" },
          next: "ok",
        },
        { id: "ok", type: "decision", decision: "approved" },
      ],
    });
    await call("POST", `/admin/tenants/${tenantId}/workflows/kyc/versions/${version}/publish`);

    // The last vendor call of each start hangs: the applicant and the token exist at the vendor,
    // and nothing of them is committed when the process dies.
    sim.stats.inFlight.websdk_link = 0;
    await fetch(`${simServer.url}/_simulator/faults`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ action: "websdk_link", delayMs: 5000, times: CASES }),
    });
    const caseIds: string[] = [];
    for (let i = 0; i < CASES; i++) {
      const created = await call(
        "POST",
        "/cases",
        {
          workflowId: "kyc",
          type: "KYC",
          payload: {},
          subject: {
            displayName: `Customer ${i}`,
            person: {
              firstName: "Ada",
              lastName: `Number${i}`,
              identifiers: [{ type: "external_customer_id", value: `crash-cust-${i}` }],
            },
          },
        },
        partner,
      );
      caseIds.push(created.caseId);
    }
    const deadline = Date.now() + 30_000;
    while ((sim.stats.inFlight.websdk_link ?? 0) < CASES) {
      if (Date.now() > deadline)
        throw new Error(`the starts did not reach the vendor: ${JSON.stringify(sim.stats)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(sim.applicants.size).toBe(CASES);
    child.kill("SIGKILL");
    await child.exited;

    child = await start();
    const waitAll = async (status: string) => {
      const until = Date.now() + 60_000;
      for (;;) {
        const cases = await Promise.all(caseIds.map((id) => call("GET", `/cases/${id}`, undefined, partner)));
        if (cases.every((c) => c.status === status)) return cases;
        if (Date.now() > until) throw new Error(`cases are ${cases.map((c) => c.status).join(", ")}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    await waitAll("waiting");
    // The restarted start met the vendor's 409 and found the applicant: one per customer.
    expect(sim.applicants.size).toBe(CASES);
    for (let i = 0; i < CASES; i++) {
      const mine = [...sim.applicants.values()].filter((a) => a.externalUserId === `crash-cust-${i}`);
      expect(mine).toHaveLength(1);
      const sent = await sim.review((mine[0] as { id: string }).id, { reviewAnswer: "GREEN" });
      expect(sent.status).toBe(200);
    }
    const decided = await waitAll("decided");
    for (const c of decided) expect(c.result.decisionHistory).toHaveLength(1);
    child.kill("SIGTERM");
    await child.exited;

    const db: Db = await database.open();
    try {
      const runs = await db.root.selectFrom("provider_runs").select(["case_id", "subject_ref"]).execute();
      expect(runs).toHaveLength(CASES);
      expect(new Set(runs.map((r) => r.case_id)).size).toBe(CASES);
      const events = await db.root
        .selectFrom("events")
        .select(["case_id", "event_type"])
        .where("case_id", "in", caseIds)
        .execute();
      expect(events.filter((e) => e.event_type === "case.decided")).toHaveLength(CASES);
      expect(events.filter((e) => e.event_type === "node.notification")).toHaveLength(CASES);
      // The calls of the killed attempt are on record too: per case, the one create_applicant
      // call that made the applicant, then the restarted start's 409 (more than one when a slow
      // machine made that start retry: every later call is a 409, never a second applicant).
      const creates = await db.root
        .selectFrom("provider_calls")
        .select(["case_id", "http_status"])
        .where("action", "=", "create_applicant")
        .execute();
      for (const caseId of caseIds) {
        const mine = creates.filter((c) => c.case_id === caseId).map((c) => c.http_status);
        expect(
          mine.filter((s) => s !== 409),
          caseId,
        ).toHaveLength(1);
        expect(mine.filter((s) => s === 409).length, caseId).toBeGreaterThanOrEqual(1);
      }
    } finally {
      await db.close();
    }
  }, 180_000);
});
