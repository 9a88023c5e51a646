import { sql } from "kysely";
import { SumsubSimulator } from "../../src/modules/providers/brokers/sumsub/sumsub.simulator.js";
import {
  APP_TOKEN_HEADER,
  requestSignature,
  SIG_HEADER,
  TS_HEADER,
} from "../../src/modules/providers/brokers/sumsub/sumsub.wire.js";
import type { WorkflowDefinition } from "../../src/modules/workflows/workflow.types.js";
import type { Db } from "../../src/platform/db/index.js";
import { runIfMain } from "../lib/harness.js";
import { median, percentile, round } from "../lib/stats.js";
import type { Scenario } from "../lib/types.js";

/**
 * A `sumsub` node against the Sumsub simulator (in the bench process): the service's own time per
 * case from submission to the `idv-application-start` notification, minus the time it spent
 * waiting on the vendor's three calls, at two steady arrival rates; and pending actions per second
 * (`refresh_sdk_token`: one vendor call each) against `GET /health` and the simulator alone.
 */
const CREDENTIALS = { appToken: "sbx:bench-app-token", secretKey: "bench-sumsub-secret-key" };
const WEBHOOK_SECRET = "bench-sumsub-webhook-secret";
const RATES = [10, 50];

const kyc: WorkflowDefinition = {
  inputSchema: { type: "object" },
  start: "idv",
  nodes: [
    { id: "idv", type: "provider", provider: "sumsub", config: { levelName: "bench-level" }, next: "ok" },
    { id: "ok", type: "decision", decision: "approved" },
  ],
} as WorkflowDefinition;

let customer = 0;
function submission(): string {
  const n = customer++;
  return JSON.stringify({
    workflowId: "kyc",
    type: "KYC",
    payload: {},
    subject: {
      displayName: `Customer ${n}`,
      person: {
        firstName: "Ada",
        lastName: `Bench${n}`,
        nationality: "GB",
        identifiers: [{ type: "external_customer_id", value: `bench-${Date.now()}-${n}` }],
      },
    },
  });
}

interface Overheads {
  cases: number;
  notified: number;
  /** Per case: notification commit − submission − the vendor calls' durations, in ms. */
  overheads: number[];
  /** Per case: submission → notification commit, in ms. */
  totals: number[];
  vendorMs: number[];
}

async function overheadsOf(db: Db, tenantId: string, from: Date): Promise<Overheads> {
  const { rows } = await sql<{ total_ms: number | null; vendor_ms: number | null }>`
    SELECT extract(epoch FROM (e.created_at - c.created_at)) * 1000 AS total_ms,
           (SELECT sum(pc.duration_ms) FROM provider_calls pc
             WHERE pc.tenant_id = c.tenant_id AND pc.case_id = c.id)::float8 AS vendor_ms
    FROM cases c
    LEFT JOIN events e ON e.case_id = c.id AND e.event_type = 'node.notification'
    WHERE c.tenant_id = ${tenantId} AND c.created_at >= ${from}`.execute(db.root);
  const done = rows.filter((r) => r.total_ms !== null);
  return {
    cases: rows.length,
    notified: done.length,
    totals: done.map((r) => Number(r.total_ms)),
    vendorMs: done.map((r) => Number(r.vendor_ms ?? 0)),
    overheads: done.map((r) => Number(r.total_ms) - Number(r.vendor_ms ?? 0)),
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const scenario: Scenario = {
  name: "providers",
  description:
    "sumsub node vs the simulator: service overhead per case (submitted → idv-application-start, minus vendor time); pending actions/s",
  async run(ctx) {
    const sim = new SumsubSimulator({ ...CREDENTIALS, webhookSecret: WEBHOOK_SECRET });
    const simServer = await sim.listen(0);
    try {
      const server = await ctx.startServer();
      const partner = await server.partner({ scopes: ["cases:write", "cases:read", "cases:callback"] });
      await server.admin("PUT", `/admin/tenants/${partner.tenantId}/providers/sumsub`, {
        baseUrl: simServer.url,
        credentials: CREDENTIALS,
        webhookSecret: WEBHOOK_SECRET,
      });
      const { version } = await server.admin<{ version: number }>(
        "POST",
        `/admin/tenants/${partner.tenantId}/workflows/kyc/versions`,
        kyc,
      );
      await server.admin(
        "POST",
        `/admin/tenants/${partner.tenantId}/workflows/kyc/versions/${version}/publish`,
      );
      const headers = { ...partner.headers, "content-type": "application/json" };

      /** Submits cases at `rate` for `seconds`, each with its own customer, and waits for their notifications. */
      const round_ = async (rate: number, seconds: number): Promise<Overheads> => {
        const from = await server.withDb(async (db) => {
          const { rows } = await sql<{ now: Date }>`SELECT now() AS now`.execute(db.root);
          return (rows[0] as { now: Date }).now;
        });
        // Each request has its own body: paced sends one body, so rounds are driven per request here.
        const total = Math.round(rate * seconds);
        const started = performance.now();
        const sends: Promise<void>[] = [];
        for (let i = 0; i < total; i++) {
          const wait = started + (i * 1000) / rate - performance.now();
          if (wait > 0) await sleep(wait);
          sends.push(
            fetch(`${server.url}/cases`, { method: "POST", headers, body: submission() }).then(
              async (res) => {
                if (res.status !== 201)
                  throw new Error(`submission answered ${res.status}: ${await res.text()}`);
              },
            ),
          );
        }
        await Promise.all(sends);
        const deadline = Date.now() + 60_000;
        for (;;) {
          const o = await server.withDb((db) => overheadsOf(db, partner.tenantId, from));
          if (o.notified === o.cases && o.cases >= total) return o;
          if (Date.now() > deadline)
            throw new Error(`${o.cases - o.notified} cases never reached the notification`);
          await sleep(200);
        }
      };

      ctx.log("warming up");
      await round_(RATES[0] as number, Math.max(1, ctx.settings.warmupSeconds));
      const perRate = new Map<number, Overheads[]>();
      const busyBefore = { ...sim.stats.busyMs };
      const requestsBefore = { ...sim.stats.requests };
      for (let pass = 1; pass <= ctx.settings.repeats; pass++) {
        for (const rate of RATES) {
          const o = await round_(rate, ctx.settings.durationSeconds);
          perRate.set(rate, [...(perRate.get(rate) ?? []), o]);
          ctx.log(
            `${rate} cases/s round ${pass}: overhead p50 ${round(percentile(o.overheads, 50))} ms, ` +
              `p99 ${round(percentile(o.overheads, 99))} ms; vendor p50 ${round(percentile(o.vendorMs, 50))} ms`,
          );
        }
      }
      const simBusy = ["create_applicant", "sdk_token", "websdk_link"].reduce(
        (sum, a) => sum + ((sim.stats.busyMs[a] ?? 0) - (busyBefore[a] ?? 0)),
        0,
      );
      const simCases = (sim.stats.requests.create_applicant ?? 0) - (requestsBefore.create_applicant ?? 0);

      // Pending actions: one paused case, its handle, and refresh_sdk_token under load.
      const caseRes = await fetch(`${server.url}/cases`, { method: "POST", headers, body: submission() });
      const { caseId } = (await caseRes.json()) as { caseId: string };
      let handle: string | undefined;
      for (let i = 0; i < 300 && !handle; i++) {
        const pending = (await (
          await fetch(`${server.url}/cases/${caseId}/pending`, { headers })
        ).json()) as {
          pending: Array<{ pendingHandle: string }>;
        };
        handle = pending.pending[0]?.pendingHandle;
        if (!handle) await sleep(100);
      }
      if (!handle) throw new Error("the case never paused");
      const ts = String(Math.floor(Date.now() / 1000));
      const vendorBody = JSON.stringify({ userId: "bench-user", levelName: "bench-level", ttlInSecs: 600 });
      const [health, vendor, action] = await ctx.load([
        { name: "GET /health", baseUrl: () => server.url, path: "/health" },
        {
          name: "simulator alone: POST /resources/accessTokens/sdk",
          baseUrl: () => simServer.url,
          path: "/resources/accessTokens/sdk",
          method: "POST",
          headers: {
            "content-type": "application/json",
            [APP_TOKEN_HEADER]: CREDENTIALS.appToken,
            [TS_HEADER]: ts,
            [SIG_HEADER]: requestSignature(
              CREDENTIALS.secretKey,
              ts,
              "POST",
              "/resources/accessTokens/sdk",
              vendorBody,
            ),
          },
          body: vendorBody,
        },
        {
          name: "POST /pending/{handle}/actions/refresh_sdk_token",
          baseUrl: () => server.url,
          path: `/pending/${handle}/actions/refresh_sdk_token`,
          method: "POST",
          headers: partner.headers,
        },
      ]);
      if (!health || !vendor || !action) throw new Error("a load target is missing");
      const rows = RATES.map((rate) => {
        const runs = perRate.get(rate) ?? [];
        return {
          name: `case → idv-application-start at ${rate} cases/s`,
          figures: {
            "overhead p50 ms": round(median(runs.map((o) => percentile(o.overheads, 50)))),
            "overhead p99 ms": round(median(runs.map((o) => percentile(o.overheads, 99)))),
            "vendor p50 ms": round(median(runs.map((o) => percentile(o.vendorMs, 50)))),
            "total p50 ms": round(median(runs.map((o) => percentile(o.totals, 50)))),
            "req/s": null,
            "of /health": null,
          },
        };
      });
      const loadRow = (r: typeof health) => ({
        name: r.name,
        figures: {
          "overhead p50 ms": null,
          "overhead p99 ms": null,
          "vendor p50 ms": null,
          "total p50 ms": r.p50Ms,
          "req/s": round(r.requestsPerSecond),
          "of /health": round(r.requestsPerSecond / health.requestsPerSecond),
        },
      });
      return {
        rows: [...rows, loadRow(health), loadRow(vendor), loadRow(action)],
        notes: [
          `database: ${server.database}; the simulator and the load generator run in the bench process`,
          "overhead: the notification's commit time minus the case's creation time (both the database's clock), " +
            "minus the durations of the case's vendor calls as the service measured them (find-or-create, SDK token, link)",
          `the simulator itself spent ${round(simCases > 0 ? simBusy / simCases : 0)} ms per case answering those calls`,
          `pending actions: ${round(action.requestsPerSecond / vendor.requestsPerSecond)} of the simulator alone ` +
            "(each action is one signed vendor call, recorded, with the handle and case checked)",
        ],
      };
    } finally {
      await simServer.close();
    }
  },
};

export default scenario;

await runIfMain(import.meta.url, scenario);
