import autocannon from "autocannon";
import { sql } from "kysely";
import type { WorkflowDefinition } from "../../src/modules/workflows/workflow.types.js";
import type { Db } from "../../src/platform/db/index.js";
import { median, round } from "../lib/stats.js";
import type { BenchServer, Scenario } from "../lib/types.js";

/** Three nodes: two rules, then the decision. The submission path and the engine's common case. */
const threeNodeRules: WorkflowDefinition = {
  inputSchema: { type: "object", properties: { amount: { type: "number" } }, required: ["amount"] },
  start: "amount",
  nodes: [
    {
      id: "amount",
      type: "rules",
      rules: [{ when: "payload.amount > 10000", next: "review" }],
      default: "country",
    },
    {
      id: "country",
      type: "rules",
      rules: [{ when: "subject.person.nationality == 'KP'", next: "review" }],
      default: "approve",
    },
    { id: "approve", type: "decision", decision: "approved", output: { reason: "'screened'" } },
    { id: "review", type: "decision", decision: "in_review", output: { reason: "'manual review'" } },
  ],
};

const submission = JSON.stringify({
  workflowId: "screen",
  type: "KYC",
  payload: { amount: 120 },
  subject: {
    displayName: "Ada Lovelace",
    person: { firstName: "Ada", lastName: "Lovelace", nationality: "GB" },
  },
});

interface DecisionWindow {
  decided: number;
  pending: number;
  decisionsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
}

/**
 * Decisions of the cases created in [from, to): how many were decided, how fast the engine
 * decided them (decisions per second over the span from the first submission to the last
 * decision), and the time from each submission to its decision.
 */
async function decisionsOf(db: Db, tenantId: string, from: Date, to: Date): Promise<DecisionWindow> {
  const { rows } = await sql<{
    decided: number;
    pending: number;
    first: Date | null;
    last: Date | null;
    p50: number | null;
    p99: number | null;
  }>`
    WITH w AS (
      SELECT created_at, (decision->>'decidedAt')::timestamptz AS decided_at
      FROM cases WHERE tenant_id = ${tenantId} AND created_at >= ${from} AND created_at < ${to}
    )
    SELECT count(decided_at)::int8 AS decided,
           (count(*) - count(decided_at))::int8 AS pending,
           min(created_at) AS first, max(decided_at) AS last,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM decided_at - created_at) * 1000) AS p50,
           percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM decided_at - created_at) * 1000) AS p99
    FROM w`.execute(db.root);
  const r = rows[0];
  if (!r?.first || !r.last)
    return { decided: 0, pending: r?.pending ?? 0, decisionsPerSecond: 0, p50Ms: 0, p99Ms: 0 };
  const span = (r.last.getTime() - r.first.getTime()) / 1000;
  return {
    decided: r.decided,
    pending: r.pending,
    decisionsPerSecond: span > 0 ? r.decided / span : 0,
    p50Ms: Number(r.p50),
    p99Ms: Number(r.p99),
  };
}

/** Waits until no case of the tenant is still on its way to a decision. */
async function drained(server: BenchServer, tenantId: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pending = await server.withDb(async (db) => {
      const row = await db.root
        .selectFrom("cases")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("tenant_id", "=", tenantId)
        .where("status", "in", ["received", "running"])
        .executeTakeFirstOrThrow();
      return Number(row.n);
    });
    if (pending === 0) return;
    if (Date.now() > deadline) throw new Error(`${pending} cases still undecided after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const scenario: Scenario = {
  name: "cases",
  description:
    "POST /cases and end-to-end decisions (3-node rules workflow) against GET /health on one server",
  async run(ctx) {
    const server = await ctx.startServer();
    const partner = await server.partner({ scopes: ["cases:write", "cases:read"] });
    const base = `/admin/tenants/${partner.tenantId}/workflows/screen/versions`;
    await server.admin("POST", base, threeNodeRules);
    await server.admin("POST", `${base}/1/publish`);
    const headers = { ...partner.headers, "content-type": "application/json" };

    // (a) and (c): submissions at a fixed concurrency, interleaved with the /health ceiling.
    const started = new Date();
    const [health, submit] = await ctx.load([
      { name: "GET /health", baseUrl: () => server.url, path: "/health" },
      {
        name: "POST /cases",
        baseUrl: () => server.url,
        path: "/cases",
        method: "POST",
        headers,
        body: submission,
      },
    ]);
    if (!health || !submit) throw new Error("the load generator returned no result");
    await drained(server, partner.tenantId);
    const saturated = await server.withDb((db) => decisionsOf(db, partner.tenantId, started, new Date()));

    // (b): decisions at a steady submission rate below saturation, submission to decision.
    const rate = Number(process.env.BENCH_CASES_RATE ?? 1000);
    const steady: DecisionWindow[] = [];
    for (let round = 1; round <= ctx.settings.repeats; round++) {
      const from = new Date();
      ctx.log(`steady load: ${rate} submissions/s for ${ctx.settings.durationSeconds} s (round ${round})`);
      const result = await autocannon({
        url: `${server.url}/cases`,
        method: "POST",
        headers,
        body: submission,
        connections: ctx.settings.connections,
        overallRate: rate,
        duration: ctx.settings.durationSeconds,
      });
      if (result.non2xx > 0 || result.errors > 0)
        throw new Error(`steady load: ${result.non2xx} non-2xx, ${result.errors} errors`);
      const to = new Date();
      await drained(server, partner.tenantId);
      steady.push(await server.withDb((db) => decisionsOf(db, partner.tenantId, from, to)));
    }
    const steadyMedian = {
      decisionsPerSecond: median(steady.map((s) => s.decisionsPerSecond)),
      p50Ms: median(steady.map((s) => s.p50Ms)),
      p99Ms: median(steady.map((s) => s.p99Ms)),
    };

    const of = (rps: number) => round(rps / health.requestsPerSecond);
    return {
      rows: [
        {
          name: health.name,
          figures: {
            "req/s": round(health.requestsPerSecond),
            "p50 ms": round(health.p50Ms),
            "p99 ms": round(health.p99Ms),
            "of /health": 1,
          },
        },
        {
          name: `${submit.name} (${ctx.settings.connections} connections)`,
          figures: {
            "req/s": round(submit.requestsPerSecond),
            "p50 ms": round(submit.p50Ms),
            "p99 ms": round(submit.p99Ms),
            "of /health": of(submit.requestsPerSecond),
          },
        },
        {
          name: "decisions while submissions saturate",
          figures: {
            "req/s": round(saturated.decisionsPerSecond),
            "p50 ms": round(saturated.p50Ms),
            "p99 ms": round(saturated.p99Ms),
            "of /health": of(saturated.decisionsPerSecond),
          },
        },
        {
          name: `decisions at ${rate} submissions/s`,
          figures: {
            "req/s": round(steadyMedian.decisionsPerSecond),
            "p50 ms": round(steadyMedian.p50Ms),
            "p99 ms": round(steadyMedian.p99Ms),
            "of /health": of(steadyMedian.decisionsPerSecond),
          },
        },
      ],
      notes: [
        `database: ${server.database}; workers in the API process (CDS_ROLE=all)`,
        "decision rows: req/s is decisions per second from the first submission to the last decision; latencies are submission to decision",
        `goals: POST /cases ≥ 2,500/s with p99 < 50 ms; ≥ 1,000 decisions/s with p99 < 250 ms`,
        `saturated run: ${saturated.decided} cases decided`,
      ],
    };
  },
};

export default scenario;
