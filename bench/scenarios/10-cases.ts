import { setTimeout as sleep } from "node:timers/promises";
import { sql } from "kysely";
import type { Db } from "../../src/platform/db/index.js";
import { startBareServer } from "../lib/bare.js";
import { runIfMain } from "../lib/harness.js";
import { paced } from "../lib/load.js";
import { median, percentile, round } from "../lib/stats.js";
import type { BenchServer, ResultRow, Scenario } from "../lib/types.js";
import { threeNodeRules } from "../lib/workflows.js";

/** Three nodes: two rules, then the decision. The submission path and the engine's common case. */

const submission = JSON.stringify({
  workflowId: "screen",
  type: "KYC",
  payload: { amount: 120 },
  subject: {
    displayName: "Ada Lovelace",
    person: { firstName: "Ada", lastName: "Lovelace", nationality: "GB" },
  },
});

interface CaseSummary {
  status: string;
  createdAt: string;
  decision: { decidedAt: string } | null;
}

/** Every case of the tenant created in [from, to), through the operator API (either database). */
async function casesOf(server: BenchServer, tenantId: string, from: Date, to: Date): Promise<CaseSummary[]> {
  const all: CaseSummary[] = [];
  let cursor: string | null = null;
  do {
    const query = new URLSearchParams({
      tenantId,
      createdFrom: from.toISOString(),
      createdTo: to.toISOString(),
      limit: "100",
      ...(cursor ? { cursor } : {}),
    });
    const page: { cases: CaseSummary[]; nextCursor: string | null } = await server.admin(
      "GET",
      `/admin/cases?${query}`,
    );
    all.push(...page.cases);
    cursor = page.nextCursor;
  } while (cursor);
  return all;
}

interface Decisions {
  decided: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
}

/** Decisions per second from the first submission to the last decision; submission-to-decision latency. */
function decisionsIn(cases: CaseSummary[]): Decisions {
  const decided = cases.filter((c) => c.decision !== null);
  if (decided.length === 0) return { decided: 0, perSecond: 0, p50Ms: 0, p99Ms: 0 };
  const created = decided.map((c) => Date.parse(c.createdAt));
  const at = decided.map((c) => Date.parse(c.decision?.decidedAt as string));
  const latencies = decided.map((_, i) => (at[i] as number) - (created[i] as number));
  const span = (Math.max(...at) - Math.min(...created)) / 1000;
  return {
    decided: decided.length,
    perSecond: span > 0 ? decided.length / span : 0,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
  };
}

/** Waits until no case of the tenant is still on its way to a decision. */
async function drained(server: BenchServer, tenantId: string, timeoutMs = 600_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let busy = 0;
    for (const status of ["received", "running"]) {
      const page: { cases: unknown[] } = await server.admin(
        "GET",
        `/admin/cases?tenantId=${tenantId}&status=${status}&limit=1`,
      );
      busy += page.cases.length;
    }
    if (busy === 0) return;
    if (Date.now() > deadline) throw new Error(`cases still undecided after ${timeoutMs} ms`);
    await sleep(200);
  }
}

interface Counters {
  commits: number;
  otherCommits: number;
  /** The server's WAL position: other databases write to the same WAL. */
  wal: string;
  tables: Map<string, { ins: number; upd: number; del: number; hot: number }>;
}

async function counters(db: Db): Promise<Counters> {
  await sql`SELECT pg_stat_clear_snapshot()`.execute(db.root);
  const { rows: commits } = await sql<{ mine: string; others: string }>`
    SELECT sum(xact_commit) FILTER (WHERE datname = current_database()) AS mine,
           sum(xact_commit) FILTER (WHERE datname <> current_database()) AS others
    FROM pg_stat_database`.execute(db.root);
  const { rows: tables } = await sql<{ relname: string; ins: string; upd: string; del: string; hot: string }>`
    SELECT relname, n_tup_ins AS ins, n_tup_upd AS upd, n_tup_del AS del, n_tup_hot_upd AS hot
    FROM pg_stat_user_tables`.execute(db.root);
  const { rows: wal } = await sql<{ lsn: string }>`SELECT pg_current_wal_lsn()::text AS lsn`.execute(db.root);
  return {
    commits: Number(commits[0]?.mine ?? 0),
    otherCommits: Number(commits[0]?.others ?? 0),
    wal: wal[0]?.lsn ?? "0/0",
    tables: new Map(
      tables.map((t) => [
        t.relname,
        { ins: Number(t.ins), upd: Number(t.upd), del: Number(t.del), hot: Number(t.hot) },
      ]),
    ),
  };
}

interface Work {
  decided: number;
  transactions: number;
  rows: number;
  /** WAL records of this database's blocks and its transactions' commits. */
  walBytes: number;
  /** Of which full-page images (the first change of a page after a checkpoint). */
  fpiBytes: number;
  /** All WAL the server wrote meanwhile, other databases included. */
  serverWalBytes: number;
  /** False when the WAL was recycled before it could be read: `walBytes` is then the server's. */
  walInspected: boolean;
  otherCommits: number;
  byTable: string[];
}

/**
 * PostgreSQL's own counters over `count` cases submitted at `rate` and decided: transactions
 * committed on the service's database, rows written (inserted, updated, deleted) by table, and
 * WAL written, per decided case. WAL is the server's: other databases' work in the window (their
 * commits are reported) adds to it.
 */
async function workPerCase(
  server: BenchServer,
  tenantId: string,
  target: { url: string; headers: Record<string, string> },
  count: number,
  rate: number,
): Promise<Work> {
  // pg_walinspect reads the WAL between two positions, to count this database's records only.
  await server.withDb((db) => sql`CREATE EXTENSION IF NOT EXISTS pg_walinspect`.execute(db.root));
  // An idle backend reports its counters within 10 s (PostgreSQL's PGSTAT_IDLE_INTERVAL): let the
  // work before this measurement be counted before it starts.
  await sleep(11_000);
  const before = await server.withDb(counters);
  const from = new Date();
  await paced({
    url: `${target.url}/cases`,
    method: "POST",
    headers: target.headers,
    body: submission,
    connections: 32,
    rate,
    seconds: count / rate,
  });
  const to = new Date();
  await drained(server, tenantId);
  await sleep(11_000);
  const after = await server.withDb(counters);
  const wal = await server.withDb(async (db) => {
    const { rows: all } = await sql<{ bytes: string }>`
      SELECT pg_wal_lsn_diff(${after.wal}::pg_lsn, ${before.wal}::pg_lsn) AS bytes`.execute(db.root);
    const server = Number(all[0]?.bytes ?? 0);
    try {
      // This database's records (their blocks are in it) and the commit records of its transactions.
      const { rows } = await sql<{ mine: string; fpi: string }>`
        WITH r AS (SELECT * FROM pg_get_wal_records_info(${before.wal}::pg_lsn, ${after.wal}::pg_lsn)),
        oid AS (SELECT oid::text AS oid FROM pg_database WHERE datname = current_database()),
        here AS (
          SELECT r.* FROM r, oid WHERE r.block_ref LIKE '%rel %/' || oid.oid || '/%'
        ),
        xids AS (SELECT DISTINCT xid FROM here WHERE xid <> 0)
        SELECT (SELECT sum(record_length) FROM here)
                 + coalesce((SELECT sum(record_length) FROM r WHERE resource_manager = 'Transaction'
                                                        AND xid IN (SELECT xid FROM xids)), 0) AS mine,
               (SELECT sum(fpi_length) FROM here) AS fpi`.execute(db.root);
      return { server, mine: Number(rows[0]?.mine ?? 0), fpi: Number(rows[0]?.fpi ?? 0), inspected: true };
    } catch {
      // A busy server may have recycled the WAL already: only the server-wide figure is left.
      return { server, mine: server, fpi: 0, inspected: false };
    }
  });
  const decided = decisionsIn(await casesOf(server, tenantId, from, to)).decided;
  let rows = 0;
  const byTable: string[] = [];
  for (const [table, a] of after.tables) {
    const b = before.tables.get(table) ?? { ins: 0, upd: 0, del: 0, hot: 0 };
    const d = { ins: a.ins - b.ins, upd: a.upd - b.upd, del: a.del - b.del, hot: a.hot - b.hot };
    const total = d.ins + d.upd + d.del;
    if (total === 0) continue;
    rows += total;
    const per = (n: number) => round(n / decided);
    byTable.push(
      `${table}: ${per(d.ins)} inserted, ${per(d.upd)} updated (${per(d.hot)} HOT), ${per(d.del)} deleted`,
    );
  }
  return {
    decided,
    transactions: (after.commits - before.commits) / decided,
    rows: rows / decided,
    walBytes: wal.mine / decided,
    fpiBytes: wal.fpi / decided,
    serverWalBytes: wal.server / decided,
    walInspected: wal.inspected,
    otherCommits: after.otherCommits - before.otherCommits,
    byTable,
  };
}

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
        const work = await workPerCase(server, partner.tenantId, { url: server.url, headers }, counted, rate);
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
