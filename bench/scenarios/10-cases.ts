import { startBareServer } from "../lib/bare.js";
import { casesOf, type Decisions, decisionsIn, drained, submission, workPerCase } from "../lib/cases.js";
import { runIfMain } from "../lib/harness.js";
import { paced } from "../lib/load.js";
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
    const ratio = (value: number, base: number) => (base > 0 ? round(value / base) : null);

    for (const database of databases) {
      // The baseline: one INSERT per request, nothing else, on the same kind of database.
      const bare = await startBareServer(database);
      let baseline: number;
      try {
        const [result] = await ctx.load(
          [
            {
              name: `bare INSERT server (${database})`,
              baseUrl: () => bare.url,
              path: "/cases",
              method: "POST",
              headers: { "content-type": "application/json" },
              body: submission,
            },
          ],
          { connections },
        );
        if (!result) throw new Error("the load generator returned no result");
        baseline = result.requestsPerSecond;
        rows.push({
          name: result.name,
          figures: {
            "req/s": round(result.requestsPerSecond),
            "p50 ms": round(result.p50Ms),
            "p99 ms": round(result.p99Ms),
            "of bare": 1,
          },
        });
      } finally {
        await bare.stop();
      }

      // The service as `npm start` runs it: API and workers in one process.
      const server = await ctx.startServer({ database });
      const partner = await server.partner({ scopes: ["cases:write", "cases:read"] });
      const base = `/admin/tenants/${partner.tenantId}/workflows/screen/versions`;
      await server.admin("POST", base, threeNodeRules);
      await server.admin("POST", `${base}/1/publish`);
      const headers = { ...partner.headers, "content-type": "application/json" };

      const loadFrom = new Date();
      const [submitted] = await ctx.load(
        [
          {
            name: `POST /cases, decided in the same process (${database})`,
            baseUrl: () => server.url,
            path: "/cases",
            method: "POST",
            headers,
            body: submission,
          },
        ],
        { connections },
      );
      if (!submitted) throw new Error("the load generator returned no result");
      const loadTo = new Date();
      await drained(server, partner.tenantId);
      const saturated = decisionsIn(await casesOf(server, partner.tenantId, loadFrom, loadTo));
      rows.push({
        name: submitted.name,
        figures: {
          "req/s": round(submitted.requestsPerSecond),
          "p50 ms": round(submitted.p50Ms),
          "p99 ms": round(submitted.p99Ms),
          "of bare": ratio(submitted.requestsPerSecond, baseline),
        },
      });
      rows.push({
        name: `decisions while submissions saturate (${database})`,
        figures: {
          "req/s": round(saturated.perSecond),
          "p50 ms": round(saturated.p50Ms),
          "p99 ms": round(saturated.p99Ms),
          "of bare": ratio(saturated.perSecond, baseline),
        },
      });

      // Submission to decision at half the maximum rate, evenly spaced.
      const half = Math.max(10, Math.round(submitted.requestsPerSecond / 2));
      const steady: Decisions[] = [];
      for (let pass = 1; pass <= ctx.settings.repeats; pass++) {
        const from = new Date();
        await paced({
          url: `${server.url}/cases`,
          method: "POST",
          headers,
          body: submission,
          connections,
          rate: half,
          seconds: ctx.settings.durationSeconds,
        });
        const to = new Date();
        await drained(server, partner.tenantId);
        const run = decisionsIn(await casesOf(server, partner.tenantId, from, to));
        ctx.log(
          `${database}, round ${pass} at ${half}/s: ${round(run.perSecond)} decisions/s, ` +
            `p50 ${round(run.p50Ms)} ms, p99 ${round(run.p99Ms)} ms`,
        );
        steady.push(run);
      }
      const p99 = median(steady.map((r) => r.p99Ms));
      rows.push({
        name: `decisions at ${half} submissions/s, half the maximum (${database})`,
        figures: {
          "req/s": round(median(steady.map((r) => r.perSecond))),
          "p50 ms": round(median(steady.map((r) => r.p50Ms))),
          "p99 ms": round(p99),
          "of bare": ratio(median(steady.map((r) => r.perSecond)), baseline),
        },
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
        const work = await workPerCase(server, async () => {
          const from = new Date();
          await paced({
            url: `${server.url}/cases`,
            method: "POST",
            headers,
            body: submission,
            connections: 32,
            rate,
            seconds: counted / rate,
          });
          const to = new Date();
          await drained(server, partner.tenantId);
          return decisionsIn(await casesOf(server, partner.tenantId, from, to)).decided;
        });
        rows.push({
          name: `database work per decided case (${work.decided} cases at ${rate}/s)`,
          figures: {
            transactions: round(work.transactions),
            "rows written": round(work.rows),
            "WAL KB": round(work.walBytes / 1024),
          },
        });
        notes.push(
          `per decided case by table: ${work.byTable.join("; ")}`,
          work.walInspected
            ? `WAL per decided case: ${round(work.walBytes / 1024)} KB of this database's records (pg_walinspect), of which ` +
                `${round(work.fpiBytes / 1024)} KB full-page images; the server wrote ${round(work.serverWalBytes / 1024)} KB ` +
                `per case in all, other databases committing ${work.otherCommits} transactions meanwhile`
            : `WAL per decided case: the server's ${round(work.serverWalBytes / 1024)} KB in all (its WAL was recycled ` +
                `before it could be read per database), other databases committing ${work.otherCommits} transactions meanwhile`,
          "goals: ≤ 1.5 transactions, ≤ 7 rows, ≤ 6 KB of WAL per decided case",
        );
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
