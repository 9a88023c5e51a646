import { type CaseSummary, decisionsIn, drained, workNotes } from "../lib/cases.js";
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
import {
  customerKey,
  type HistoryShape,
  historyWorkflow,
  hotKey,
  ibanKey,
  keyWindows,
  LIST_ID,
  seedHistory,
  transactionSubject,
} from "../lib/history.js";
import { seedList } from "../lib/lists.js";
import { setting } from "../lib/settings.js";
import { median, round } from "../lib/stats.js";
import type { BenchContext, ResultRow, Scenario } from "../lib/types.js";

/**
 * History: an aggregate node with three figures over the customer's past cases, a rules node
 * looking the receiver's IBAN up in a block list, then the decision; on an empty database and on
 * one with a seeded history of cases, beside the bare INSERT server.
 */

type Database = "postgres" | "pglite";

/** The history seeded on each database (BENCH_HISTORY_*, see bench/README.md). */
function shapeOf(database: Database): HistoryShape {
  const embedded = database === "pglite";
  return {
    cases: setting(
      embedded ? "BENCH_HISTORY_EMBEDDED_CASES" : "BENCH_HISTORY_CASES",
      embedded ? 100_000 : 1_000_000,
    ),
    hotCases: setting(
      embedded ? "BENCH_HISTORY_EMBEDDED_HOT_CASES" : "BENCH_HISTORY_HOT_CASES",
      embedded ? 10_000 : 100_000,
    ),
    hotKeys: setting("BENCH_HISTORY_HOT_KEYS", 3),
    customers: Math.max(1, setting("BENCH_HISTORY_CUSTOMERS", 50_000)),
    ibans: Math.max(1, setting("BENCH_HISTORY_IBANS", 100_000)),
    days: Math.max(1, setting("BENCH_HISTORY_DAYS", 90)),
  };
}

const isHot = (c: CaseSummary) => c.externalCustomerId?.startsWith("hot-") === true;
const pick = (n: number) => Math.floor(Math.random() * n);

/** A new Transaction submission per call: a share `hotShare` from the hot keys, the rest from ordinary customers. */
function submissionsOf(shape: HistoryShape, hotShare: number): () => string {
  return () => {
    const hot = shape.hotKeys > 0 && Math.random() < hotShare;
    const customer = hot ? hotKey(pick(shape.hotKeys)) : customerKey(pick(shape.customers));
    return JSON.stringify({
      workflowId: "history",
      type: "Transaction",
      eventTimestamp: new Date().toISOString(),
      payload: {},
      subject: transactionSubject(customer, ibanKey(pick(shape.ibans)), 1 + pick(99_900) / 100),
    });
  };
}

interface Settings {
  connections: number;
  counted: number;
  hotShare: number;
  listValues: number;
  figures: boolean;
}

/** One service, on an empty database or a seeded one: its rows and notes. */
async function measure(
  ctx: BenchContext,
  database: Database,
  seeded: boolean,
  baseline: number,
  settings: Settings,
): Promise<{ rows: ResultRow[]; notes: string[] }> {
  const shape = shapeOf(database);
  const label = `${database}, ${seeded ? `${shape.cases.toLocaleString("en")} past cases` : "no history"}`;
  const rows: ResultRow[] = [];
  const notes: string[] = [];
  const server = await ctx.startServer({ database });
  try {
    const partner = await server.partner({ scopes: ["cases:write", "cases:read"] });
    const headers = { ...partner.headers, "content-type": "application/json" };
    const submissions = {
      tenantId: partner.tenantId,
      headers,
      body: submissionsOf(shape, settings.hotShare),
    };
    const withList = settings.listValues > 0;
    if (withList) {
      await server.withDb((db) => seedList(db, partner.tenantId, LIST_ID, settings.listValues));
    }
    const base = `/admin/tenants/${partner.tenantId}/workflows/history/versions`;
    await server.admin("POST", base, historyWorkflow(withList, settings.figures));
    await server.admin("POST", `${base}/1/publish`);

    if (seeded) {
      // One case accepted and decided by the service: the seeded cases copy its columns.
      const res = await fetch(`${server.url}/cases`, {
        method: "POST",
        headers,
        body: submissions.body(),
      });
      if (res.status !== 201)
        throw new Error(`the template case was refused: ${res.status} ${await res.text()}`);
      const { caseId } = (await res.json()) as { caseId: string };
      await drained(server, partner.tenantId);
      ctx.log(`${label}: seeding`);
      const seconds = await server.withDb((db) => seedHistory(db, partner.tenantId, caseId, shape));
      const hot = await server.withDb((db) => keyWindows(db, partner.tenantId, "customer", hotKey(0)));
      notes.push(
        `${label}: seeded in ${round(seconds)} s: ${shape.cases} cases over ${shape.days} days, ` +
          `${shape.customers} customers, ${shape.ibans} IBANs, ${shape.hotKeys} hot customers of ${shape.hotCases} cases ` +
          `(one holds ${hot.hour} cases in the last hour, ${hot.week} in 7 days, ${hot.month} in 30 days)`,
      );
    }

    const { submitted, cases, cpu } = await saturate(
      ctx,
      server,
      `POST /cases, decided in the same process (${label})`,
      submissions,
      settings.connections,
    );
    const saturated = decisionsIn(cases);
    notes.push(...cpuNotes(label, cpu, saturated.decided));
    rows.push({
      name: submitted.name,
      figures: rateFigures({ ...submitted, perSecond: submitted.requestsPerSecond }, baseline),
    });
    rows.push({
      name: `decisions while submissions saturate (${label})`,
      figures: rateFigures(saturated, baseline),
    });

    const half = halfTheMaximum(submitted, saturated);
    const rounds = await steadyRounds(ctx, server, submissions, half, settings.connections, label);
    const steady = rounds.map(decisionsIn);
    const p99 = median(steady.map((r) => r.p99Ms));
    rows.push({
      name: `decisions at ${half} submissions/s, half the maximum (${label})`,
      figures: rateFigures(
        {
          perSecond: median(steady.map((r) => r.perSecond)),
          p50Ms: median(steady.map((r) => r.p50Ms)),
          p99Ms: p99,
        },
        baseline,
      ),
    });
    // The hot keys' cases of every round together: a tenth of a round's cases is too few for a p99.
    const hotCases = rounds.flat().filter(isHot);
    const hot = decisionsIn(hotCases);
    rows.push({
      name: `of which the hot keys' ${hot.decided} cases, all rounds (${label})`,
      figures: { "req/s": null, "p50 ms": round(hot.p50Ms), "p99 ms": round(hot.p99Ms), "of bare": null },
    });

    const failed = saturated.failed + steady.reduce((n, r) => n + r.failed, 0);
    if (failed > 0)
      notes.push(`${label}: ${failed} cases FAILED instead of being decided (see the service's log)`);
    const postRatio = submitted.requestsPerSecond / baseline;
    const decisionRatio = saturated.perSecond / baseline;
    const met = (ok: boolean) => (ok ? "met" : "missed");
    notes.push(
      `${label}: POST /cases ${round(postRatio)} of the bare server (goal ≥ 0.35: ${met(postRatio >= 0.35)}); ` +
        `decisions ${round(decisionRatio)} (goal ≥ 0.3: ${met(decisionRatio >= 0.3)}); ` +
        `p99 submission to decision at half the maximum ${round(p99)} ms, hot keys ${round(hot.p99Ms)} ms ` +
        `(goal < 100 ms: ${met(p99 < 100 && hot.p99Ms < 100)})`,
    );

    if (database === "postgres") {
      const rate = Math.min(500, half);
      const work = await workOfSubmissions(server, submissions, settings.counted, rate);
      rows.push({
        name: `database work per decided case (${label}; ${work.decided} cases at ${rate}/s)`,
        figures: {
          transactions: round(work.transactions),
          "rows written": round(work.rows),
          "WAL KB": round(work.walBytes / 1024),
        },
      });
      notes.push(
        ...workNotes(work).map((n) => `${label}: ${n}`),
        `${label}: goals ≤ 1.5 transactions (${met(work.transactions <= 1.5)}), ≤ 10 rows ` +
          `(${met(work.rows <= 10)}), ≤ 9 KB of WAL (${met(work.walBytes <= 9 * 1024)}) per decided case`,
      );
    }
    return { rows, notes };
  } finally {
    // The next service gets the machine to itself.
    await server.stop();
  }
}

const scenario: Scenario = {
  name: "history",
  description:
    "a workflow reading the customer's history (3 figures of an aggregate node) and a block list, on an " +
    "empty database and on a seeded history, against the bare INSERT server; database work per decided case",
  async run(ctx) {
    const settings: Settings = {
      connections: setting("BENCH_HISTORY_CONNECTIONS", 64),
      counted: setting("BENCH_HISTORY_COUNTED", 2000),
      hotShare: Math.min(1, setting("BENCH_HISTORY_HOT_SHARE", 0.1)),
      listValues: setting("BENCH_HISTORY_LIST_VALUES", 1_000_000),
      figures: setting("BENCH_HISTORY_FIGURES", 1) !== 0,
    };
    const databases = (process.env.BENCH_HISTORY_DATABASES ?? "postgres,pglite").split(",") as Database[];
    const histories = (process.env.BENCH_HISTORY_RUNS ?? "empty,seeded").split(",");
    const rows: ResultRow[] = [];
    const notes: string[] = [];
    for (const database of databases) {
      const bare = await bareBaseline(
        ctx,
        database,
        submissionsOf(shapeOf(database), settings.hotShare),
        settings.connections,
      );
      const baseline = bare.requestsPerSecond;
      rows.push({ name: bare.name, figures: rateFigures({ ...bare, perSecond: baseline }, baseline) });
      for (const history of histories) {
        const result = await measure(ctx, database, history === "seeded", baseline, settings);
        rows.push(...result.rows);
        notes.push(...result.notes);
      }
    }
    notes.push(
      `one service process (CDS_ROLE=all), ${settings.connections} connections; a share ${settings.hotShare} of the ` +
        'submissions from the hot customers; "of bare" is the ratio to the bare INSERT server on the same database ' +
        "in this run; decision latencies are submission to decision",
    );
    if (!settings.figures || settings.listValues === 0)
      notes.push(
        `the workflow ${settings.figures ? "with" : "WITHOUT"} its aggregate node and ${settings.listValues > 0 ? "with" : "WITHOUT"} ` +
          "its block list (BENCH_HISTORY_FIGURES, BENCH_HISTORY_LIST_VALUES): the goals are the whole workflow's",
      );
    return { rows, notes };
  },
};

export default scenario;
await runIfMain(import.meta.url, scenario);
