import { setTimeout as sleep } from "node:timers/promises";
import { sql } from "kysely";
import type { Db } from "../../src/platform/db/index.js";
import { percentile, round } from "./stats.js";
import type { BenchServer } from "./types.js";

/** A KYC submission to the three-node workflow of bench/lib/workflows.ts (`screen`). */
export const submission = JSON.stringify({
  workflowId: "screen",
  type: "KYC",
  payload: { amount: 120 },
  subject: {
    displayName: "Ada Lovelace",
    person: { firstName: "Ada", lastName: "Lovelace", nationality: "GB" },
  },
});

export interface CaseSummary {
  caseId: string;
  status: string;
  externalCustomerId: string | null;
  createdAt: string;
  decision: { decidedAt: string } | null;
}

/** Every case of the tenant created in [from, to), through the operator API (either database). */
export async function casesOf(
  server: BenchServer,
  tenantId: string,
  from: Date,
  to: Date,
): Promise<CaseSummary[]> {
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

export interface Decisions {
  decided: number;
  /** Cases that ended `failed` instead of decided (a budget exceeded, an error). */
  failed: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
}

/** Decisions per second from the first submission to the last decision; submission-to-decision latency. */
export function decisionsIn(cases: readonly CaseSummary[]): Decisions {
  const decided = cases.filter((c) => c.decision !== null);
  const failed = cases.filter((c) => c.status === "failed").length;
  if (decided.length === 0) return { decided: 0, failed, perSecond: 0, p50Ms: 0, p99Ms: 0 };
  const created = decided.map((c) => Date.parse(c.createdAt));
  const at = decided.map((c) => Date.parse(c.decision?.decidedAt as string));
  const latencies = decided.map((_, i) => (at[i] as number) - (created[i] as number));
  // A loop, not Math.max(...at): a run of more than about 120,000 cases overflows the stack.
  const last = at.reduce((a, b) => Math.max(a, b), Number.NEGATIVE_INFINITY);
  const first = created.reduce((a, b) => Math.min(a, b), Number.POSITIVE_INFINITY);
  const span = (last - first) / 1000;
  return {
    decided: decided.length,
    failed,
    perSecond: span > 0 ? decided.length / span : 0,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
  };
}

/** Waits until no case of the tenant is still on its way to a decision. */
export async function drained(server: BenchServer, tenantId: string, timeoutMs = 600_000): Promise<void> {
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
  /** Checkpoints the server has begun (timed and requested), and when the latest completed one began. */
  checkpoints: number;
  checkpointAt: Date;
  /**
   * Whether a checkpoint is under way: its checkpointer is elsewhere than its main loop's wait.
   * One still running is not yet in `pg_control_checkpoint()`, so `checkpointAt` cannot show it.
   */
  checkpointRunning: boolean;
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
  const { rows: checkpoint } = await sql<{ count: string; at: Date; running: boolean }>`
    SELECT (SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter) AS count,
           (SELECT checkpoint_time FROM pg_control_checkpoint()) AS at,
           EXISTS (SELECT 1 FROM pg_stat_activity WHERE backend_type = 'checkpointer'
                     AND wait_event IS DISTINCT FROM 'CheckpointerMain') AS running`.execute(db.root);
  return {
    commits: Number(commits[0]?.mine ?? 0),
    otherCommits: Number(commits[0]?.others ?? 0),
    wal: wal[0]?.lsn ?? "0/0",
    checkpoints: Number(checkpoint[0]?.count ?? 0),
    checkpointAt: new Date(checkpoint[0]?.at ?? 0),
    checkpointRunning: checkpoint[0]?.running === true,
    tables: new Map(
      tables.map((t) => [
        t.relname,
        { ins: Number(t.ins), upd: Number(t.upd), del: Number(t.del), hot: Number(t.hot) },
      ]),
    ),
  };
}

/**
 * Tables written on a clock, whatever the load: a worker's heartbeat every few seconds, and an API
 * key's last use, recorded at most once a minute (the scenarios create no key while they count).
 * Their rows are listed by table but not counted in `rows`, which is the work the cases made.
 */
const TIMED_TABLES = new Set(["worker_heartbeats", "api_keys"]);

export interface Work {
  decided: number;
  transactions: number;
  /** Rows the cases wrote: every table but `TIMED_TABLES`. */
  rows: number;
  /** Rows of `TIMED_TABLES` in the same time, per case. */
  timedRows: number;
  /** WAL records of this database's blocks and its transactions' commits. */
  walBytes: number;
  /** Of which full-page images (the first change of a page after a checkpoint). */
  fpiBytes: number;
  /** The same by relation, per case, largest first (at most eight). */
  fpiByRelation: Array<{ relation: string; bytes: number }>;
  /** The records' bytes other than their images, by relation, per case, largest first (at most ten). */
  recordsByRelation: Array<{ relation: string; bytes: number }>;
  /** All WAL the server wrote meanwhile, other databases included. */
  serverWalBytes: number;
  /** False when the WAL was recycled before it could be read: `walBytes` is then the server's. */
  walInspected: boolean;
  /**
   * Checkpoints the server made while the cases ran, and how long before they began the latest
   * one before them had begun: a page's first change after a checkpoint is written whole, so
   * these decide how much of `fpiBytes` a window holds.
   */
  checkpointsDuring: number;
  checkpointAgeSeconds: number;
  /** A checkpoint begun before the cases was still running when they began. */
  checkpointRunningAtStart: boolean;
  otherCommits: number;
  byTable: string[];
  /** Statements per case, where the server has `pg_stat_statements` loaded (else empty). */
  statements: string[];
}

/**
 * PostgreSQL's own counters over a load that `run` puts on the service and waits out: transactions
 * committed on the service's database, rows written (inserted, updated, deleted) by table, and WAL
 * written, per case `run` reports done. WAL is the server's: other databases' work in the window
 * (their commits are reported) adds to it.
 */
export async function workPerCase(server: BenchServer, run: () => Promise<number>): Promise<Work> {
  // pg_walinspect reads the WAL between two positions, to count this database's records only.
  await server.withDb((db) => sql`CREATE EXTENSION IF NOT EXISTS pg_walinspect`.execute(db.root));
  // An idle backend reports its counters within 10 s (PostgreSQL's PGSTAT_IDLE_INTERVAL): let the
  // work before this measurement be counted before it starts.
  await sleep(11_000);
  const statementsLoaded = await server.withDb(resetStatements);
  const before = await server.withDb(counters);
  const started = new Date();
  const decided = await run();
  await sleep(11_000);
  const after = await server.withDb(counters);
  const statements = statementsLoaded ? await server.withDb((db) => statementsPerCase(db, decided)) : [];
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
      // By relation (a record's first block names it): its full-page images, and the rest of its
      // records (the rows and index entries written).
      const { rows: relations } = await sql<{ relation: string | null; images: string; records: string }>`
        SELECT c.relname AS relation, sum(r.fpi_length) AS images,
               sum(r.record_length - r.fpi_length) AS records
        FROM pg_get_wal_records_info(${before.wal}::pg_lsn, ${after.wal}::pg_lsn) r
        JOIN pg_database d ON d.datname = current_database()
          AND r.block_ref LIKE '%rel %/' || d.oid::text || '/%'
        LEFT JOIN pg_class c ON c.relfilenode = substring(r.block_ref FROM 'rel [0-9]+/[0-9]+/([0-9]+)')::oid
        GROUP BY 1`.execute(db.root);
      const largest = (field: "images" | "records", count: number) =>
        relations
          .map((i) => ({ relation: i.relation ?? "(other)", bytes: Number(i[field]) }))
          .filter((i) => i.bytes > 0)
          .sort((x, y) => y.bytes - x.bytes)
          .slice(0, count);
      return {
        server,
        mine: Number(rows[0]?.mine ?? 0),
        fpi: Number(rows[0]?.fpi ?? 0),
        images: largest("images", 8),
        records: largest("records", 10),
        inspected: true,
      };
    } catch {
      // A busy server may have recycled the WAL already: only the server-wide figure is left.
      return { server, mine: server, fpi: 0, images: [], records: [], inspected: false };
    }
  });
  let rows = 0;
  let timedRows = 0;
  const byTable: string[] = [];
  for (const [table, a] of after.tables) {
    const b = before.tables.get(table) ?? { ins: 0, upd: 0, del: 0, hot: 0 };
    const d = { ins: a.ins - b.ins, upd: a.upd - b.upd, del: a.del - b.del, hot: a.hot - b.hot };
    const total = d.ins + d.upd + d.del;
    if (total === 0) continue;
    if (TIMED_TABLES.has(table)) timedRows += total;
    else rows += total;
    const per = (n: number) => round(n / decided);
    byTable.push(
      `${table}: ${per(d.ins)} inserted, ${per(d.upd)} updated (${per(d.hot)} HOT), ${per(d.del)} deleted`,
    );
  }
  return {
    decided,
    transactions: (after.commits - before.commits) / decided,
    rows: rows / decided,
    timedRows: timedRows / decided,
    walBytes: wal.mine / decided,
    fpiBytes: wal.fpi / decided,
    fpiByRelation: wal.images.map((i) => ({ relation: i.relation, bytes: i.bytes / decided })),
    recordsByRelation: wal.records.map((i) => ({ relation: i.relation, bytes: i.bytes / decided })),
    serverWalBytes: wal.server / decided,
    walInspected: wal.inspected,
    checkpointsDuring: after.checkpoints - before.checkpoints,
    checkpointAgeSeconds: (started.getTime() - before.checkpointAt.getTime()) / 1000,
    checkpointRunningAtStart: before.checkpointRunning,
    otherCommits: after.otherCommits - before.otherCommits,
    byTable,
    statements,
  };
}

/**
 * Where the server has `pg_stat_statements` loaded (`shared_preload_libraries`; the scenarios never
 * load it themselves), its statistics are reset before the counted cases so that `statementsPerCase`
 * can say which statements their transactions were. False when it is not loaded.
 */
async function resetStatements(db: Db): Promise<boolean> {
  try {
    await sql`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`.execute(db.root);
    await sql`SELECT pg_stat_statements_reset()`.execute(db.root);
    return true;
  } catch {
    return false;
  }
}

/** The service's statements on this database since the reset, by calls per case (the first twenty). */
async function statementsPerCase(db: Db, decided: number): Promise<string[]> {
  // Statements that differ only in how many rows they carry are counted as one.
  const { rows } = await sql<{ query: string; calls: string; ms: number }>`
    SELECT regexp_replace(left(query, 70), '[[:space:]]+', ' ', 'g') AS query, sum(calls) AS calls,
           sum(total_exec_time) AS ms
    FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid AND d.datname = current_database()
    WHERE query !~* 'pg_stat_statements'
    GROUP BY 1 ORDER BY 2 DESC LIMIT 20`.execute(db.root);
  const { rows: totals } = await sql<{ calls: string; entries: string; evicted: string }>`
    SELECT sum(calls) AS calls, count(*) AS entries, (SELECT dealloc FROM pg_stat_statements_info) AS evicted
    FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid AND d.datname = current_database()`.execute(
    db.root,
  );
  const total = totals[0];
  return [
    `${round(Number(total?.calls ?? 0) / decided)} calls of ${total?.entries} statements in all ` +
      `(${total?.evicted} evicted from the statistics meanwhile)`,
    ...rows.map((r) => `${round(Number(r.calls) / decided)} calls, ${round(r.ms / decided)} ms: ${r.query}`),
  ];
}

/** What the rows figure leaves out, if anything. */
export function timedNote(work: Work): string {
  return work.timedRows > 0
    ? ` (rows written exclude ${round(work.timedRows)} per case of heartbeats and API keys' last use, written on a clock, not by cases)`
    : "";
}

/** `; <what> per case by relation: a 1.2 KB, b 0.3 KB`, or nothing when there is none. */
function perRelation(what: string, list: Array<{ relation: string; bytes: number }>): string {
  if (list.length === 0) return "";
  return `; ${what} per case by relation: ${list.map((i) => `${i.relation} ${round(i.bytes / 1024)} KB`).join(", ")}`;
}

/** The notes that explain a `Work` figure: rows by table, and where the WAL was counted. */
export function workNotes(work: Work): string[] {
  return [
    `per decided case by table: ${work.byTable.join("; ")}${timedNote(work)}`,
    work.walInspected
      ? `WAL per decided case: ${round(work.walBytes / 1024)} KB of this database's records (pg_walinspect), of which ` +
        `${round(work.fpiBytes / 1024)} KB full-page images; the server wrote ${round(work.serverWalBytes / 1024)} KB ` +
        `per case in all, other databases committing ${work.otherCommits} transactions meanwhile; ` +
        `${work.checkpointsDuring} checkpoints begun while the cases ran; ` +
        (work.checkpointRunningAtStart
          ? "one begun before them was still running when they began"
          : `the last before them began ${round(work.checkpointAgeSeconds)} s before`) +
        perRelation("full-page images", work.fpiByRelation) +
        perRelation("records other than images", work.recordsByRelation)
      : `WAL per decided case: the server's ${round(work.serverWalBytes / 1024)} KB in all (its WAL was recycled ` +
        `before it could be read per database), other databases committing ${work.otherCommits} transactions meanwhile`,
    ...(work.statements.length > 0
      ? [`statements per decided case (pg_stat_statements): ${work.statements.join("; ")}`]
      : []),
  ];
}
