import { decisionsIn, submission, workNotes } from "../lib/cases.js";
import {
  bareBaseline,
  cpuNotes,
  halfTheMaximum,
  rateFigures,
  saturate,
  steadyRounds,
  workOfSubmissions,
} from "../lib/decisioning.js";
import { runIfMain } from "../lib/harness.js";
import { median, round } from "../lib/stats.js";
import type { ResultRow, Scenario } from "../lib/types.js";
import { threeNodeRules } from "../lib/workflows.js";

/** Three nodes: two rules, then the decision. The submission path and the engine's common case. */

const scenario: Scenario = {
  name: "cases",
  description:
    "the service as a user runs it (npm start: API and engine in one process) on PostgreSQL and on the " +
    "embedded database, against a bare Fastify server doing one INSERT per request on the same database; " +
    "3-node rules workflow; database work per decided case",
  async run(ctx) {
    const connections = Number(process.env.BENCH_CASES_CONNECTIONS ?? 64);
    const counted = Number(process.env.BENCH_CASES_COUNTED ?? 2000);
    const databases = (process.env.BENCH_CASES_DATABASES ?? "postgres,pglite").split(",") as Array<
      "postgres" | "pglite"
    >;
    const rows: ResultRow[] = [];
    const notes: string[] = [];

    for (const database of databases) {
      // The baseline: one INSERT per request, nothing else, on the same kind of database.
      const bare = await bareBaseline(ctx, database, submission, connections);
      const baseline = bare.requestsPerSecond;
      rows.push({ name: bare.name, figures: rateFigures({ ...bare, perSecond: baseline }, baseline) });

      // The service as `npm start` runs it: API and workers in one process.
      const server = await ctx.startServer({ database });
      const partner = await server.partner({ scopes: ["cases:write", "cases:read"] });
      const base = `/admin/tenants/${partner.tenantId}/workflows/screen/versions`;
      await server.admin("POST", base, threeNodeRules);
      await server.admin("POST", `${base}/1/publish`);
      const headers = { ...partner.headers, "content-type": "application/json" };
      const submissions = { tenantId: partner.tenantId, headers, body: submission };

      const { submitted, cases, cpu } = await saturate(
        ctx,
        server,
        `POST /cases, decided in the same process (${database})`,
        submissions,
        connections,
      );
      const saturated = decisionsIn(cases);
      notes.push(...cpuNotes(database, cpu, saturated.decided));
      rows.push({
        name: submitted.name,
        figures: rateFigures({ ...submitted, perSecond: submitted.requestsPerSecond }, baseline),
      });
      rows.push({
        name: `decisions while submissions saturate (${database})`,
        figures: rateFigures(saturated, baseline),
      });

      // Submission to decision at half the maximum rate, evenly spaced.
      const half = halfTheMaximum(submitted, saturated);
      const steady = (await steadyRounds(ctx, server, submissions, half, connections, database)).map(
        decisionsIn,
      );
      const p99 = median(steady.map((r) => r.p99Ms));
      rows.push({
        name: `decisions at ${half} submissions/s, half the maximum (${database})`,
        figures: rateFigures(
          {
            perSecond: median(steady.map((r) => r.perSecond)),
            p50Ms: median(steady.map((r) => r.p50Ms)),
            p99Ms: p99,
          },
          baseline,
        ),
      });
      const postRatio = submitted.requestsPerSecond / baseline;
      const decisionRatio = saturated.perSecond / baseline;
      notes.push(
        `${database}: POST /cases ${round(postRatio)} of the bare server (goal ≥ 0.4: ${postRatio >= 0.4 ? "met" : "missed"}); ` +
          `decisions ${round(decisionRatio)} (goal ≥ 0.3: ${decisionRatio >= 0.3 ? "met" : "missed"}); ` +
          `p99 submission to decision at half the maximum ${round(p99)} ms (goal < 100 ms: ${p99 < 100 ? "met" : "missed"})`,
      );

      if (database === "postgres") {
        const rate = Math.min(500, half);
        const work = await workOfSubmissions(server, submissions, counted, rate);
        rows.push({
          name: `database work per decided case (${work.decided} cases at ${rate}/s)`,
          figures: {
            transactions: round(work.transactions),
            "rows written": round(work.rows),
            "WAL KB": round(work.walBytes / 1024),
          },
        });
        notes.push(...workNotes(work), "goals: ≤ 1.5 transactions, ≤ 7 rows, ≤ 6 KB of WAL per decided case");
      }
    }
    notes.push(
      `one service process (CDS_ROLE=all, as npm start runs it), ${connections} connections; "of bare" is the ratio to ` +
        "the bare INSERT server on the same database in this run; decision latencies are submission to decision",
    );
    return { rows, notes };
  },
};

export default scenario;
await runIfMain(import.meta.url, scenario);
