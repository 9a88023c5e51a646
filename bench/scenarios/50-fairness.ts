import { sql } from "kysely";
import type { WorkflowDefinition } from "../../src/modules/workflows/workflow.types.js";
import type { Db } from "../../src/platform/db/index.js";
import { runIfMain } from "../lib/harness.js";
import { paced } from "../lib/load.js";
import { median, round } from "../lib/stats.js";
import type { BenchServer, Scenario } from "../lib/types.js";
import { threeNodeRules } from "../lib/workflows.js";

/**
 * The budget's worst case: three nodes, each a comprehension over a comprehension of the payload's
 * list, sized (97 elements) to spend just under one node's evaluation budget, so that every node
 * burns the most a node may and the case still goes on, with an input-schema pattern that would
 * backtrack exponentially on a backtracking engine.
 */
const heavy = "payload.l.all(x, payload.l.all(y, y >= 0))";
const noisyWorkflow: WorkflowDefinition = {
  inputSchema: {
    type: "object",
    properties: {
      l: { type: "array", items: { type: "number" } },
      s: { type: "string", pattern: "^(a+)+$" },
    },
    required: ["l"],
  },
  start: "one",
  nodes: [
    { id: "one", type: "rules", rules: [{ when: heavy, next: "two" }], default: "two" },
    { id: "two", type: "rules", rules: [{ when: heavy, next: "three" }], default: "three" },
    { id: "three", type: "rules", rules: [{ when: heavy, next: "done" }], default: "done" },
    { id: "done", type: "decision", decision: "approved" },
  ],
};

const person = { firstName: "Ada", lastName: "Lovelace", nationality: "GB" };
const ordinarySubmission = JSON.stringify({
  workflowId: "ordinary",
  type: "KYC",
  payload: { amount: 120 },
  subject: { displayName: "Ada Lovelace", person },
});
const noisySubmission = JSON.stringify({
  workflowId: "noisy",
  type: "KYC",
  payload: { l: Array.from({ length: 97 }, (_, i) => i), s: `${"a".repeat(40)}` },
  subject: { displayName: "Ada Lovelace", person },
});

interface Latency {
  decided: number;
  p50Ms: number;
  p99Ms: number;
}

/** Submission to decision of the tenant's cases created in [from, to). */
async function latencyOf(db: Db, tenantId: string, from: Date, to: Date): Promise<Latency> {
  const { rows } = await sql<{ decided: number; p50: number | null; p99: number | null }>`
    WITH w AS (
      SELECT created_at, (decision->>'decidedAt')::timestamptz AS decided_at
      FROM cases WHERE tenant_id = ${tenantId} AND created_at >= ${from} AND created_at < ${to}
    )
    SELECT count(decided_at)::int8 AS decided,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM decided_at - created_at) * 1000) AS p50,
           percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM decided_at - created_at) * 1000) AS p99
    FROM w`.execute(db.root);
  const r = rows[0];
  return { decided: Number(r?.decided ?? 0), p50Ms: Number(r?.p50 ?? 0), p99Ms: Number(r?.p99 ?? 0) };
}

/** Waits until no case of the tenants is still on its way to a decision. */
async function drained(server: BenchServer, tenantIds: string[], timeoutMs = 300_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pending = await server.withDb(async (db) => {
      const row = await db.root
        .selectFrom("cases")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("tenant_id", "in", tenantIds)
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
  name: "fairness",
  description:
    "an ordinary tenant's submit→decided p99 with and without a noisy tenant running the evaluation budget's worst case",
  async run(ctx) {
    // As in production, and as in the cases scenario: an API process and a worker process.
    const server = await ctx.startServer({ env: { CDS_ROLE: "api" } });
    await server.addWorkers(1);
    const ordinaryRate = Number(process.env.BENCH_FAIRNESS_RATE ?? 100);
    const noisyRate = Number(process.env.BENCH_FAIRNESS_NOISY_RATE ?? 10);
    const ordinary = await server.partner({ name: "Ordinary Bank", scopes: ["cases:write", "cases:read"] });
    const noisy = await server.partner({ name: "Noisy Bank", scopes: ["cases:write", "cases:read"] });
    for (const [partner, id, definition] of [
      [ordinary, "ordinary", threeNodeRules],
      [noisy, "noisy", noisyWorkflow],
    ] as const) {
      const base = `/admin/tenants/${partner.tenantId}/workflows/${id}/versions`;
      await server.admin("POST", base, definition);
      await server.admin("POST", `${base}/1/publish`);
    }
    const submit = (headers: Record<string, string>, body: string, rate: number, seconds: number) =>
      paced({
        url: `${server.url}/cases`,
        method: "POST",
        headers: { ...headers, "content-type": "application/json" },
        body,
        rate,
        seconds,
        connections: 32,
      });

    /** One run: the ordinary tenant at its rate, the noisy one beside it or not. */
    const runOnce = async (withNoisy: boolean, seconds: number): Promise<Latency> => {
      const from = new Date();
      await Promise.all([
        submit(ordinary.headers, ordinarySubmission, ordinaryRate, seconds),
        withNoisy ? submit(noisy.headers, noisySubmission, noisyRate, seconds) : Promise.resolve(),
      ]);
      const to = new Date();
      await drained(server, [ordinary.tenantId, noisy.tenantId]);
      return server.withDb((db) => latencyOf(db, ordinary.tenantId, from, to));
    };

    ctx.log("warming up");
    await runOnce(true, ctx.settings.warmupSeconds);
    const alone: Latency[] = [];
    const together: Latency[] = [];
    for (let round_ = 1; round_ <= ctx.settings.repeats; round_++) {
      // Interleaved, so that noise from the shared machine falls on both alike.
      const a = await runOnce(false, ctx.settings.durationSeconds);
      const t = await runOnce(true, ctx.settings.durationSeconds);
      alone.push(a);
      together.push(t);
      ctx.log(
        `round ${round_}: ordinary p99 ${round(a.p99Ms)} ms alone, ${round(t.p99Ms)} ms beside the noisy tenant`,
      );
    }
    const noisyCases = await server.withDb((db) => latencyOf(db, noisy.tenantId, new Date(0), new Date()));

    const p99Alone = median(alone.map((l) => l.p99Ms));
    const p99Together = median(together.map((l) => l.p99Ms));
    const ratio = p99Together / p99Alone;
    return {
      rows: [
        {
          name: `ordinary tenant alone, ${ordinaryRate} cases/s`,
          figures: {
            "p50 ms": round(median(alone.map((l) => l.p50Ms))),
            "p99 ms": round(p99Alone),
            "p99 ratio": 1,
          },
        },
        {
          name: `ordinary tenant beside the noisy one (${noisyRate} worst-case cases/s)`,
          figures: {
            "p50 ms": round(median(together.map((l) => l.p50Ms))),
            "p99 ms": round(p99Together),
            "p99 ratio": round(ratio),
          },
        },
        {
          name: "noisy tenant's own cases",
          figures: {
            "p50 ms": round(noisyCases.p50Ms),
            "p99 ms": round(noisyCases.p99Ms),
            "p99 ratio": null,
          },
        },
      ],
      notes: [
        `database: ${server.database}; one API process and one worker process`,
        "latency is submission to decision, read from the cases' decidedAt; medians of the rounds",
        "the noisy workflow: three nodes each spending just under one node's evaluation budget, and a backtracking-prone input-schema pattern",
        `goal: p99 ratio < 1.5 (${ratio < 1.5 ? "met" : "missed"})`,
      ],
    };
  },
};

export default scenario;
await runIfMain(import.meta.url, scenario);
