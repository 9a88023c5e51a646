import { sql } from "kysely";
import type { WorkflowDefinition } from "../../src/modules/workflows/workflow.types.js";
import type { Db } from "../../src/platform/db/index.js";
import { runIfMain } from "../lib/harness.js";
import { type PacedRun, paced } from "../lib/load.js";
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

interface SteadyRun {
  submissions: PacedRun;
  decisions: DecisionWindow;
}

/** Submissions at a steady, evenly spaced rate for one measured run, and their decisions. */
async function steadyRun(
  server: BenchServer,
  tenantId: string,
  target: { url: string; headers: Record<string, string>; connections: number; seconds: number },
  rate: number,
): Promise<SteadyRun> {
  const from = new Date();
  const submissions = await paced({
    url: `${target.url}/cases`,
    method: "POST",
    headers: target.headers,
    body: submission,
    connections: target.connections,
    rate,
    seconds: target.seconds,
  });
  const to = new Date();
  await drained(server, tenantId);
  return { submissions, decisions: await server.withDb((db) => decisionsOf(db, tenantId, from, to)) };
}

const scenario: Scenario = {
  name: "cases",
  description:
    "POST /cases and end-to-end decisions (3-node rules workflow) against GET /health, API and worker processes apart",
  async run(ctx) {
    // As in production: an API process, and a worker process beside it on the same database.
    const server = await ctx.startServer({ env: { CDS_ROLE: "api" } });
    const connections = Number(process.env.BENCH_CASES_CONNECTIONS ?? 64);
    const partner = await server.partner({ scopes: ["cases:write", "cases:read"] });
    const base = `/admin/tenants/${partner.tenantId}/workflows/screen/versions`;
    await server.admin("POST", base, threeNodeRules);
    await server.admin("POST", `${base}/1/publish`);
    const headers = { ...partner.headers, "content-type": "application/json" };
    const submit = {
      name: "POST /cases",
      baseUrl: () => server.url,
      path: "/cases",
      method: "POST" as const,
      headers,
      body: submission,
    };

    // (a) and (c): the API alone, no worker yet: what ingestion costs, against the /health ceiling.
    const [health, alone] = await ctx.load(
      [{ name: "GET /health", baseUrl: () => server.url, path: "/health" }, submit],
      { connections },
    );
    if (!health || !alone) throw new Error("the load generator returned no result");

    // The engine alone: the worker decides the backlog the API built up.
    ctx.log("starting the worker process on the backlog");
    const backlogFrom = new Date(0);
    const drainStarted = Date.now();
    await server.addWorkers(1);
    await drained(server, partner.tenantId, 600_000);
    const backlog = await server.withDb((db) => decisionsOf(db, partner.tenantId, backlogFrom, new Date()));
    const drainSeconds = (Date.now() - drainStarted) / 1000;

    // Both at once: submissions at the same concurrency while the worker decides them.
    const started = new Date();
    const [together] = await ctx.load([{ ...submit, name: "POST /cases while the worker decides" }], {
      connections,
      warmupSeconds: 0,
    });
    if (!together) throw new Error("the load generator returned no result");
    await drained(server, partner.tenantId, 600_000);
    const saturated = await server.withDb((db) => decisionsOf(db, partner.tenantId, started, new Date()));

    // (b): decisions at steady submission rates, submission to decision.
    const rates = (process.env.BENCH_CASES_RATES ?? "500,1000").split(",").map(Number);
    const target = { url: server.url, headers, connections, seconds: ctx.settings.durationSeconds };
    const steady = new Map<number, SteadyRun[]>();
    for (let pass = 1; pass <= ctx.settings.repeats; pass++) {
      for (const rate of rates) {
        const run = await steadyRun(server, partner.tenantId, target, rate);
        steady.set(rate, [...(steady.get(rate) ?? []), run]);
        const { submissions: s, decisions: d } = run;
        ctx.log(
          `round ${pass} at ${rate} submissions/s: POST /cases p50 ${round(s.p50Ms)} ms, p99 ${round(s.p99Ms)} ms; ` +
            `${round(d.decisionsPerSecond)} decisions/s, p50 ${round(d.p50Ms)} ms, p99 ${round(d.p99Ms)} ms`,
        );
      }
    }

    const of = (rps: number) => round(rps / health.requestsPerSecond);
    const figures = (rps: number, p50: number, p99: number) => ({
      "req/s": round(rps),
      "p50 ms": round(p50),
      "p99 ms": round(p99),
      "of /health": of(rps),
    });
    return {
      rows: [
        { name: health.name, figures: figures(health.requestsPerSecond, health.p50Ms, health.p99Ms) },
        {
          name: `POST /cases, API alone (${connections} connections)`,
          figures: figures(alone.requestsPerSecond, alone.p50Ms, alone.p99Ms),
        },
        {
          name: "POST /cases while the worker decides",
          figures: figures(together.requestsPerSecond, together.p50Ms, together.p99Ms),
        },
        {
          name: `decisions: backlog of ${backlog.decided} drained`,
          figures: {
            "req/s": round(backlog.decided / drainSeconds),
            "p50 ms": null,
            "p99 ms": null,
            "of /health": of(backlog.decided / drainSeconds),
          },
        },
        {
          name: "decisions while submissions saturate",
          figures: figures(saturated.decisionsPerSecond, saturated.p50Ms, saturated.p99Ms),
        },
        ...rates.flatMap((rate) => {
          const runs = steady.get(rate) ?? [];
          const mid = (pick: (r: SteadyRun) => number) => median(runs.map(pick));
          return [
            {
              name: `POST /cases at ${rate}/s, evenly spaced`,
              figures: figures(
                mid((r) => r.submissions.requestsPerSecond),
                mid((r) => r.submissions.p50Ms),
                mid((r) => r.submissions.p99Ms),
              ),
            },
            {
              name: `decisions at ${rate} submissions/s`,
              figures: figures(
                mid((r) => r.decisions.decisionsPerSecond),
                mid((r) => r.decisions.p50Ms),
                mid((r) => r.decisions.p99Ms),
              ),
            },
          ];
        }),
      ],
      notes: [
        `database: ${server.database}; one API process (CDS_ROLE=api), then one worker process (CDS_ROLE=worker); ${connections} connections`,
        "decision rows: req/s is decisions per second (from the first submission to the last decision, or over the drain); latencies are submission to decision",
        "goals: POST /cases ≥ 2,500/s with p99 < 50 ms; ≥ 1,000 decisions/s with p99 < 250 ms",
      ],
    };
  },
};

export default scenario;
await runIfMain(import.meta.url, scenario);
