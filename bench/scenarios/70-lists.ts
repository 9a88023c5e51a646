import { sql } from "kysely";
import { listsModule } from "../../src/modules/lists/index.js";
import type { WorkflowDefinition } from "../../src/modules/workflows/workflow.types.js";
import type { Db } from "../../src/platform/db/index.js";
import { casesOf, type Decisions, decisionsIn, drained } from "../lib/cases.js";
import { runIfMain } from "../lib/harness.js";
import { seededValue, seedList } from "../lib/lists.js";
import { paced } from "../lib/load.js";
import { median, percentile, round } from "../lib/stats.js";
import type { BenchServer, ResultRow, Scenario } from "../lib/types.js";

const VALUES = Number(process.env.BENCH_LISTS_VALUES ?? 1_000_000);
const PROBES = Number(process.env.BENCH_LISTS_PROBES ?? 2000);
const RATE = Number(process.env.BENCH_LISTS_RATE ?? 40);
const DATABASES = (process.env.BENCH_LISTS_DATABASES ?? "postgres,pglite").split(",") as Array<
  "postgres" | "pglite"
>;
const CALLS = 10;
const PER_CALL = 10_000;

/** A screen reading two lists: the seeded million, and the one loaded while cases are decided. */
const screen: WorkflowDefinition = {
  inputSchema: { type: "object", properties: { iban: { type: "string" } }, required: ["iban"] },
  start: "lists",
  nodes: [
    {
      id: "lists",
      type: "rules",
      rules: [
        {
          when: 'inList("blocked_ibans", payload.iban) || inList("loaded_ibans", payload.iban)',
          next: "decline",
        },
      ],
      default: "approve",
    },
    { id: "approve", type: "decision", decision: "approved" },
    { id: "decline", type: "decision", decision: "declined" },
  ],
};

const submission = (iban: string) =>
  JSON.stringify({
    workflowId: "screen",
    type: "KYC",
    payload: { iban },
    subject: { displayName: "Ada Lovelace", person: { firstName: "Ada", lastName: "Lovelace" } },
  });

interface Timings {
  p50: number;
  p99: number;
}

async function timed(n: number, once: (i: number) => Promise<unknown>): Promise<Timings> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const at = performance.now();
    await once(i);
    ms.push(performance.now() - at);
  }
  return { p50: percentile(ms, 50), p99: percentile(ms, 99) };
}

/**
 * `contains` for one probe, half hits and half misses, against `SELECT 1` on the same connection
 * (the round trip alone); and the index blocks one probe reads, from its plan (a count noise
 * cannot move).
 */
async function lookups(db: Db, tenantId: string) {
  const source = listsModule.listSource;
  if (!source) throw new Error("the lists module brings no list source");
  const probe = (i: number) => {
    const n = (i * 7919) % VALUES;
    const value = i % 2 === 0 ? seededValue(n) : seededValue(VALUES + n);
    return source.contains(db.root, tenantId, [{ list: "blocked_ibans", value }]);
  };
  const hits = await source.contains(db.root, tenantId, [
    { list: "blocked_ibans", value: seededValue(VALUES - 1).toLowerCase() },
    { list: "blocked_ibans", value: seededValue(VALUES) },
  ]);
  if (hits[0] !== true || hits[1] !== false) throw new Error(`unexpected answers ${JSON.stringify(hits)}`);
  await timed(200, probe);
  const contains = await timed(PROBES, probe);
  const bare = await timed(PROBES, () => sql`SELECT 1`.execute(db.root));
  const { rows } = await sql<{ "QUERY PLAN": unknown }>`
    EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)
    SELECT EXISTS (SELECT 1 FROM list_values v JOIN lists l ON l.list_key = v.list_key
                   WHERE l.tenant_id = ${tenantId}::uuid AND l.list_id = 'blocked_ibans'
                     AND v.value = ${seededValue(123_457)})`.execute(db.root);
  const plan = JSON.stringify(rows[0]?.["QUERY PLAN"]);
  const blocks = /"Shared Hit Blocks":\s*(\d+)/.exec(plan)?.[1];
  const scan =
    /"Node Type":\s*"(Index Only Scan|Index Scan|Seq Scan)"[^}]*?"Relation Name":\s*"list_values"/.exec(
      plan,
    )?.[1];
  return { contains, bare, blocks: blocks === undefined ? null : Number(blocks), scan: scan ?? "?" };
}

async function decisionsWhile(
  server: BenchServer,
  tenantId: string,
  headers: Record<string, string>,
  seconds: number,
  during?: () => Promise<number[]>,
): Promise<{ decisions: Decisions; calls: number[] }> {
  const from = new Date();
  const load = paced({
    url: `${server.url}/cases`,
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: submission(seededValue(7)),
    connections: 16,
    rate: RATE,
    seconds,
  });
  const calls = during ? await during() : [];
  await load;
  const to = new Date();
  await drained(server, tenantId);
  return { decisions: decisionsIn(await casesOf(server, tenantId, from, to)), calls };
}

/**
 * A list of 1,000,000 values: one `contains` probe against a bare round trip; then 100,000 values
 * loaded through the API as 10 calls of 10,000 while cases reading the lists are decided at a
 * steady rate, against the same rate without loading.
 */
const scenario: Scenario = {
  name: "lists",
  description:
    "inList on a 1,000,000-value list: one lookup against SELECT 1; loading 100,000 values while deciding",
  async run(ctx) {
    const rows: ResultRow[] = [];
    const notes: string[] = [];
    for (const database of DATABASES) {
      const server = await ctx.startServer({ database });
      const partner = await server.partner({ scopes: ["cases:write", "cases:read"] });
      const lists = `/admin/tenants/${partner.tenantId}/lists`;
      await server.admin("PUT", `${lists}/blocked_ibans`, { normalize: "iban" });
      await server.admin("PUT", `${lists}/loaded_ibans`, { normalize: "iban" });
      const seedStart = performance.now();
      await server.withDb((db) => seedList(db, partner.tenantId, "blocked_ibans", VALUES));
      const seedSeconds = (performance.now() - seedStart) / 1000;
      ctx.log(`${database}: seeded ${VALUES} values in ${round(seedSeconds)} s`);
      const looked = await server.withDb((db) => lookups(db, partner.tenantId));
      rows.push({
        name: `contains, one probe, ${VALUES} values (${database})`,
        figures: {
          "p50 ms": round(looked.contains.p50),
          "p99 ms": round(looked.contains.p99),
          "SELECT 1 p50 ms": round(looked.bare.p50),
          "of SELECT 1 (p50)": round(looked.contains.p50 / looked.bare.p50),
          "index blocks": looked.blocks,
        },
      });
      notes.push(
        `${database}: ${VALUES} values seeded in ${round(seedSeconds)} s; a probe of list_values is an ${looked.scan} ` +
          `reading ${looked.blocks} shared blocks (its plan); ${PROBES} probes, half hits, from the bench process`,
      );

      const base = `/admin/tenants/${partner.tenantId}/workflows/screen/versions`;
      await server.admin("POST", base, screen);
      await server.admin("POST", `${base}/1/publish`);
      const quiet = await decisionsWhile(server, partner.tenantId, partner.headers, 10);
      let next = 0;
      const loading = await decisionsWhile(server, partner.tenantId, partner.headers, 15, async () => {
        const ms: number[] = [];
        for (let call = 0; call < CALLS; call++) {
          const add = Array.from({ length: PER_CALL }, () => seededValue(VALUES + next++));
          const at = performance.now();
          await server.admin("POST", `${lists}/loaded_ibans/values`, { add });
          ms.push(performance.now() - at);
        }
        return ms;
      });
      const counts = await server.admin<{ lists: Array<{ listId: string; valueCount: number }> }>(
        "GET",
        lists,
      );
      const loaded = counts.lists.find((l) => l.listId === "loaded_ibans")?.valueCount;
      if (loaded !== CALLS * PER_CALL) throw new Error(`loaded_ibans holds ${loaded} values`);
      rows.push({
        name: `POST …/values, ${PER_CALL} values a call, ${CALLS} calls (${database})`,
        figures: {
          "p50 ms": round(median(loading.calls)),
          "max ms": round(Math.max(...loading.calls)),
          "total s": round(loading.calls.reduce((a, b) => a + b, 0) / 1000),
        },
      });
      for (const [name, run] of [
        ["decisions, no loading", quiet.decisions],
        ["decisions while loading", loading.decisions],
      ] as const) {
        rows.push({
          name: `${name}, ${RATE}/s (${database})`,
          figures: {
            decided: run.decided,
            "p50 ms": round(run.p50Ms),
            "p99 ms": round(run.p99Ms),
            "p99 of no loading": round(run.p99Ms / quiet.decisions.p99Ms),
          },
        });
      }
      await server.stop();
    }
    notes.push("decision latency is submission to decision, read from the cases' decidedAt");
    return { rows, notes };
  },
};

export default scenario;
await runIfMain(import.meta.url, scenario);
