import { sql } from "kysely";
import type { WorkflowDefinition } from "../../src/modules/workflows/workflow.types.js";
import { decisionsIn, drained } from "../lib/cases.js";
import { halfTheMaximum, saturate, steadyRounds } from "../lib/decisioning.js";
import { runIfMain } from "../lib/harness.js";
import { customerKey, historyWorkflow, ibanKey, seedHistory, transactionSubject } from "../lib/history.js";
import { median, round } from "../lib/stats.js";
import type { BenchServer, ResultRow, Scenario } from "../lib/types.js";

/**
 * Backtests: a candidate version replayed over 100,000 past cases of the three-node workflow plus
 * an aggregate node (figures, rules, decision), on PostgreSQL: cases replayed per second, alone
 * and beside live cases; and the live cases' p99 from submission to decision at half the
 * service's maximum rate, with and without a backtest running.
 */

/** A positive number from the environment, or the default. */
const setting = (name: string, fallback: number) => Number(process.env[name] || fallback);

/**
 * The history scenario's workflow (three figures of the customer's history, rules, decision); the
 * candidate also sends payments over 500 to review.
 */
function candidate(): WorkflowDefinition {
  const wf = historyWorkflow(false);
  const screen = wf.nodes[1] as unknown as { rules: Array<{ when: string; next: string }> };
  screen.rules = screen.rules.map((r) => ({ ...r, when: `payload.amount > 500.0 || ${r.when}` }));
  return wf;
}

const CUSTOMERS = 50_000;
const IBANS = 100_000;
const pick = (n: number) => Math.floor(Math.random() * n);

function submission(): string {
  const amount = 1 + pick(99_900) / 100;
  return JSON.stringify({
    workflowId: "history",
    type: "Transaction",
    eventTimestamp: new Date().toISOString(),
    payload: { amount },
    subject: transactionSubject(customerKey(pick(CUSTOMERS)), ibanKey(pick(IBANS)), amount),
  });
}

interface BacktestView {
  backtestId: string;
  status: string;
  total: number;
  done: number;
  createdAt: string;
  finishedAt: string | null;
  summary: { changed: number; unchanged: number; needsInput: number; errors: number };
}

async function startBacktest(server: BenchServer, tenantId: string): Promise<BacktestView> {
  return server.admin<BacktestView>("POST", `/admin/tenants/${tenantId}/backtests`, {
    workflowId: "history",
    version: 2,
    from: new Date(Date.now() - 300 * 86_400_000).toISOString(),
    to: new Date().toISOString(),
  });
}

async function backtestOf(server: BenchServer, tenantId: string, id: string): Promise<BacktestView> {
  return server.admin<BacktestView>("GET", `/admin/tenants/${tenantId}/backtests/${id}`);
}

async function finished(server: BenchServer, tenantId: string, id: string): Promise<BacktestView> {
  for (;;) {
    const b = await backtestOf(server, tenantId, id);
    if (b.status !== "running") return b;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Cases replayed per second, from the service's own times of the backtest. */
const replayRate = (b: BacktestView) =>
  b.done / ((new Date(b.finishedAt ?? Date.now()).getTime() - new Date(b.createdAt).getTime()) / 1000);

const scenario: Scenario = {
  name: "backtest",
  description:
    "a candidate version replayed over 100,000 past cases (aggregate, rules, decision): cases per second, and the live cases' p99 at half the maximum rate with and without it",
  async run(ctx) {
    const cases = setting("BENCH_BACKTEST_CASES", 100_000);
    const connections = setting("BENCH_BACKTEST_CONNECTIONS", 64);
    const server = await ctx.startServer({ database: "postgres" });
    const rows: ResultRow[] = [];
    const notes: string[] = [];
    try {
      const partner = await server.partner({ scopes: ["cases:write", "cases:read"] });
      const headers = { ...partner.headers, "content-type": "application/json" };
      const base = `/admin/tenants/${partner.tenantId}/workflows/history/versions`;
      await server.admin("POST", base, historyWorkflow(false));
      await server.admin("POST", `${base}/1/publish`);
      // One case accepted and decided by the service: the past cases copy its columns and steps.
      const res = await fetch(`${server.url}/cases`, { method: "POST", headers, body: submission() });
      if (res.status !== 201) throw new Error(`the template case was refused: ${res.status}`);
      const { caseId } = (await res.json()) as { caseId: string };
      await drained(server, partner.tenantId);
      ctx.log(`seeding ${cases} past cases with their steps`);
      const seconds = await server.withDb(async (db) => {
        const took = await seedHistory(db, partner.tenantId, caseId, {
          cases,
          hotCases: 0,
          hotKeys: 0,
          customers: CUSTOMERS,
          ibans: IBANS,
          days: 30,
        });
        const started = performance.now();
        // Each past case's payload carries its own amount, which the candidate's rule reads.
        await sql`
          UPDATE cases SET payload = jsonb_build_object('amount', (subject->'transaction'->>'amount')::float8)
          WHERE tenant_id = ${partner.tenantId} AND id <> ${caseId}`.execute(db.root);
        await sql`
          INSERT INTO case_steps (tenant_id, case_id, seq, node_id, node_type, status, output, next_node_id,
                                  error, explain, created_at, finished_at)
          SELECT s.tenant_id, c.id, s.seq, s.node_id, s.node_type, s.status, s.output, s.next_node_id,
                 s.error, s.explain, c.created_at, c.created_at
          FROM cases c CROSS JOIN (SELECT * FROM case_steps WHERE case_id = ${caseId}) s
          WHERE c.tenant_id = ${partner.tenantId} AND c.id <> ${caseId}
          ORDER BY c.created_at, s.seq`.execute(db.root);
        await sql`VACUUM ANALYZE case_steps`.execute(db.root);
        await sql`CHECKPOINT`.execute(db.root);
        return took + (performance.now() - started) / 1000;
      });
      notes.push(`seeded ${cases} past cases with their steps in ${round(seconds)} s`);
      await server.admin("POST", base, candidate());

      // The backtest alone.
      const alone = await finished(
        server,
        partner.tenantId,
        (await startBacktest(server, partner.tenantId)).backtestId,
      );
      const aloneRate = replayRate(alone);
      rows.push({
        name: `backtest of ${alone.total} cases, alone`,
        figures: { "cases/s": round(aloneRate), "p50 ms": null, "p99 ms": null },
      });
      notes.push(
        `backtest alone: ${alone.status}, ${alone.done} of ${alone.total} cases, changed ${alone.summary.changed}, ` +
          `unchanged ${alone.summary.unchanged}, needs an input ${alone.summary.needsInput}, failed ${alone.summary.errors}; ` +
          `${round(aloneRate)} cases/s (goal ≥ 2,000: ${aloneRate >= 2000 ? "met" : "missed"})`,
      );

      // Live cases at half the maximum rate, without and with a backtest running.
      const submissions = { tenantId: partner.tenantId, headers, body: submission };
      const { submitted, cases: saturating } = await saturate(
        ctx,
        server,
        "POST /cases, saturating",
        submissions,
        connections,
      );
      const decided = decisionsIn(saturating);
      const maximum = Math.min(submitted.requestsPerSecond, decided.perSecond);
      const half = halfTheMaximum(submitted, decided);
      const without = (await steadyRounds(ctx, server, submissions, half, connections, "without")).map(
        decisionsIn,
      );
      const running = await startBacktest(server, partner.tenantId);
      const during = (await steadyRounds(ctx, server, submissions, half, connections, "during")).map(
        decisionsIn,
      );
      const after = await backtestOf(server, partner.tenantId, running.backtestId);
      const ended = await finished(server, partner.tenantId, running.backtestId);
      const p99Without = median(without.map((r) => r.p99Ms));
      const p99During = median(during.map((r) => r.p99Ms));
      rows.push(
        {
          name: `live cases at ${half}/s (half of ${round(maximum)}), no backtest`,
          figures: {
            "cases/s": round(median(without.map((r) => r.perSecond))),
            "p50 ms": round(median(without.map((r) => r.p50Ms))),
            "p99 ms": round(p99Without),
          },
        },
        {
          name: `live cases at ${half}/s, a backtest running`,
          figures: {
            "cases/s": round(median(during.map((r) => r.perSecond))),
            "p50 ms": round(median(during.map((r) => r.p50Ms))),
            "p99 ms": round(p99During),
          },
        },
        {
          name: `backtest of ${ended.total} cases beside live cases`,
          figures: { "cases/s": round(replayRate(ended)), "p50 ms": null, "p99 ms": null },
        },
      );
      const ratio = p99During / p99Without;
      notes.push(
        `live p99 ${round(p99Without)} ms without, ${round(p99During)} ms with a backtest running: ${round(ratio)}× ` +
          `(goal ≤ 1.2×: ${ratio <= 1.2 ? "met" : "missed"}); the backtest had replayed ${after.done} of ` +
          `${after.total} cases when the live rounds ended (${after.status})`,
      );
      return { rows, notes };
    } finally {
      await server.stop();
    }
  },
};

export default scenario;
await runIfMain(import.meta.url, scenario);
