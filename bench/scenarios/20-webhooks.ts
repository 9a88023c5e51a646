import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { configWith } from "../../src/config.js";
import { createAppContext, serviceMigrations } from "../../src/context.js";
import { insertTenant } from "../../src/modules/tenants/tenants.repo.js";
import { emitEvent, type NewEvent } from "../../src/modules/webhooks/events.js";
import { upsertWebhookConfig } from "../../src/modules/webhooks/webhook-configs.repo.js";
import { uuid } from "../../src/platform/crypto.js";
import { openDb } from "../../src/platform/db/index.js";
import { createLogger } from "../../src/platform/logger.js";
import { migrate } from "../../src/platform/migrate.js";
import { startWorker } from "../../src/worker.js";
import { runIfMain } from "../lib/harness.js";
import { insertStoredCase } from "../lib/provision.js";
import { median, percentile, round } from "../lib/stats.js";
import type { BenchServer, Scenario } from "../lib/types.js";

/**
 * Webhook delivery: sustained deliveries per second to a local receiver, and the time from an
 * event's commit to its first attempt, each with and without one tenant whose endpoint stalls
 * (accepts the connection, never answers). Events are emitted the way features emit them
 * (`emitEvent` in a transaction) from the bench process, into the database of the real service,
 * which delivers them from its own process. On the embedded database, which one process holds at a
 * time, the service's workers run inside the bench process instead.
 */
const TENANTS = 10;
/** Events per second during the latency measurement (one event per transaction, as a decision emits). */
const LATENCY_RATE = 200;
/** Events per transaction during the throughput measurement. */
const BATCH = 25;
/** Backlog (emitted, not yet received) the throughput emitter keeps, so that it measures delivery. */
const BACKLOG = 2000;
/** Events per second to the stalled tenant while it takes part. */
const STALLED_RATE = 50;
const GOALS = { deliveriesPerSecond: 1000, p99Ms: 200 };

/** The partners' endpoints: one path per tenant answers 200 at once; `/stalled` never answers. */
class Receiver {
  readonly firstSeen = new Map<number, number>();
  received = 0;
  readonly #server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.url === "/stalled") return;
      this.received++;
      const at = performance.now();
      const sequence = (
        JSON.parse(Buffer.concat(chunks).toString("utf8")) as { output: { sequence: number } }
      ).output.sequence;
      if (!this.firstSeen.has(sequence)) this.firstSeen.set(sequence, at);
      res.writeHead(200).end();
    });
  });

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

interface Tenant {
  tenantId: string;
  caseId: string;
}

/** Where events go in and how tenants are set up: the service in its own process, or in this one. */
interface Rig {
  database: string;
  tenant(url: string): Promise<Tenant>;
  emit(events: NewEvent[]): Promise<void>;
  stop(): Promise<void>;
}

const SECRETS = [{ id: "bench", secret: "whsec_bench_0123456789abcdef" }];

function serviceRig(server: BenchServer): Rig {
  return {
    database: server.database,
    async tenant(url) {
      const partner = await server.partner({ scopes: ["cases:read"] });
      await server.admin("PUT", `/admin/tenants/${partner.tenantId}/webhooks/default`, {
        url,
        secrets: SECRETS,
        activeSecretId: "bench",
      });
      return {
        tenantId: partner.tenantId,
        caseId: await server.withDb((db) => insertStoredCase(db, partner.tenantId, "running")),
      };
    },
    emit: (events) =>
      server.withDb((db) =>
        db.transaction(async (tx) => {
          for (const e of events) await emitEvent(tx, e);
        }),
      ),
    stop: async () => {},
  };
}

async function inProcessRig(): Promise<Rig> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cds-bench-webhooks-"));
  const config = configWith({ dataDir, adminToken: "bench-admin-token-0123456789", logLevel: "warn" });
  const db = await openDb({ dataDir });
  await migrate(db, serviceMigrations());
  const ctx = createAppContext({ config, db, log: createLogger(config.logLevel) });
  const worker = await startWorker(ctx);
  return {
    database: "pglite (workers in the bench process)",
    async tenant(url) {
      const tenantId = uuid();
      await insertTenant(db.root, tenantId, "Bench Bank");
      await upsertWebhookConfig(db.root, tenantId, "default", {
        url,
        secrets: SECRETS,
        secretsSealed: false,
        activeSecretId: "bench",
        maxAttempts: 5,
        timeoutMs: 10_000,
      });
      return { tenantId, caseId: await insertStoredCase(db, tenantId, "running") };
    },
    emit: (events) =>
      db.transaction(async (tx) => {
        for (const e of events) await emitEvent(tx, e);
      }),
    async stop() {
      await worker.stop();
      await db.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

let sequence = 0;
function event(t: Tenant): { event: NewEvent; sequence: number } {
  const n = sequence++;
  return {
    sequence: n,
    event: {
      tenantId: t.tenantId,
      caseId: t.caseId,
      type: "node.notification",
      webhookKey: null,
      payload: {
        event_type: "node.notification",
        payloadType: "bench-progress",
        tenantId: t.tenantId,
        caseId: t.caseId,
        nodeId: "notify_progress",
        webhookKey: null,
        output: {
          sequence: n,
          applicant_id: "a-12345",
          verification_url: "https://verify.example.com/s/abc",
        },
      },
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Emits to the stalled tenant at STALLED_RATE until stopped. */
function stallTraffic(rig: Rig, stalled: Tenant | undefined): () => Promise<void> {
  if (!stalled) return async () => {};
  let running = true;
  const loop = (async () => {
    while (running) {
      await rig.emit([event(stalled).event]);
      await sleep(1000 / STALLED_RATE);
    }
  })();
  return async () => {
    running = false;
    await loop;
  };
}

/** One event per transaction at LATENCY_RATE for `seconds`; the commit-to-first-attempt latencies. */
async function measureLatency(
  rig: Rig,
  receiver: Receiver,
  tenants: Tenant[],
  seconds: number,
): Promise<number[]> {
  const committed = new Map<number, number>();
  const started = performance.now();
  const inFlight = new Set<Promise<void>>();
  for (let i = 0; performance.now() - started < seconds * 1000; i++) {
    const due = started + (i * 1000) / LATENCY_RATE;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    const { event: e, sequence: n } = event(tenants[i % tenants.length] as Tenant);
    const p = rig.emit([e]).then(() => {
      committed.set(n, performance.now());
    });
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
    if (inFlight.size >= 16) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  const deadline = performance.now() + 15_000;
  while ([...committed.keys()].some((n) => !receiver.firstSeen.has(n)) && performance.now() < deadline)
    await sleep(20);
  return [...committed].map(([n, at]) => (receiver.firstSeen.get(n) ?? Number.POSITIVE_INFINITY) - at);
}

/** Emits as fast as delivery keeps up (a bounded backlog); first deliveries per second over `seconds`. */
async function measureThroughput(
  rig: Rig,
  receiver: Receiver,
  tenants: Tenant[],
  seconds: number,
): Promise<number> {
  const mine = new Set<number>();
  const delivered = () => {
    let n = 0;
    for (const s of mine) if (receiver.firstSeen.has(s)) n++;
    return n;
  };
  let stop = false;
  const emitter = (async () => {
    let i = 0;
    while (!stop) {
      if (mine.size - delivered() > BACKLOG) {
        await sleep(5);
        continue;
      }
      const batch = Array.from({ length: BATCH }, () => event(tenants[i++ % tenants.length] as Tenant));
      for (const b of batch) mine.add(b.sequence);
      await rig.emit(batch.map((b) => b.event));
    }
  })();
  await sleep(1000);
  const from = delivered();
  const t0 = performance.now();
  await sleep(seconds * 1000);
  const rate = ((delivered() - from) * 1000) / (performance.now() - t0);
  stop = true;
  await emitter;
  const deadline = performance.now() + 30_000;
  while (delivered() < mine.size && performance.now() < deadline) await sleep(20);
  return rate;
}

/** What a bare keep-alive client reaches against the same receiver: the ceiling of this machine. */
async function receiverCeiling(url: string, seconds: number): Promise<number> {
  const agent = new http.Agent({ keepAlive: true });
  let sent = 0;
  const end = performance.now() + seconds * 1000;
  const body = JSON.stringify({ output: { sequence: -1 } });
  const worker = async () => {
    while (performance.now() < end) {
      await new Promise<void>((resolve, reject) => {
        const req = http.request(`${url}/ceiling`, { method: "POST", agent }, (res) => {
          res.resume();
          res.on("end", resolve);
        });
        req.on("error", reject);
        req.end(body);
      });
      sent++;
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  agent.destroy();
  return sent / seconds;
}

const scenario: Scenario = {
  name: "webhooks",
  description:
    "deliveries/s to a local receiver and commit → first attempt, with and without a stalled tenant",
  async run(ctx) {
    const server = await ctx.startServer();
    let rig: Rig;
    if (server.database === "postgres") rig = serviceRig(server);
    else {
      await server.stop();
      rig = await inProcessRig();
    }
    const receiver = new Receiver();
    const url = await receiver.start();
    let stopStall = async () => {};
    try {
      const tenants: Tenant[] = [];
      for (let i = 0; i < TENANTS; i++) tenants.push(await rig.tenant(`${url}/t${i}`));
      const stalled = await rig.tenant(`${url}/stalled`);
      const seconds = ctx.settings.durationSeconds;
      ctx.log("warming up");
      await measureThroughput(rig, receiver, tenants, Math.max(1, ctx.settings.warmupSeconds));
      const results = {
        plain: { rate: [] as number[], lat: [] as number[][] },
        stall: { rate: [] as number[], lat: [] as number[][] },
      };
      const ceiling: number[] = [];
      // The healthy rounds first: a stalled endpoint's backlog outlives its round, so rounds with it
      // come after, with its traffic running throughout, as during a partner's outage.
      for (const mode of ["plain", "stall"] as const) {
        if (mode === "stall") stopStall = stallTraffic(rig, stalled);
        for (let pass = 1; pass <= ctx.settings.repeats; pass++) {
          const rate = await measureThroughput(rig, receiver, tenants, seconds);
          const latencies = await measureLatency(rig, receiver, tenants, seconds);
          results[mode].rate.push(rate);
          results[mode].lat.push(latencies);
          ctx.log(
            `${mode} round ${pass}: ${Math.round(rate)} deliveries/s, p50 ${round(percentile(latencies, 50))} ms, ` +
              `p99 ${round(percentile(latencies, 99))} ms`,
          );
          if (mode === "plain") ceiling.push(await receiverCeiling(url, Math.min(2, seconds)));
        }
      }
      await stopStall();
      const row = (name: string, r: { rate: number[]; lat: number[][] }) => ({
        name,
        figures: {
          "deliveries/s": round(median(r.rate)),
          "p50 ms": round(median(r.lat.map((l) => percentile(l, 50)))),
          "p99 ms": round(median(r.lat.map((l) => percentile(l, 99)))),
        },
      });
      const plain = row("10 healthy tenants", results.plain);
      const withStall = row("+ 1 stalled tenant", results.stall);
      const meets = (r: typeof plain) =>
        Number(r.figures["deliveries/s"]) >= GOALS.deliveriesPerSecond &&
        Number(r.figures["p99 ms"]) < GOALS.p99Ms;
      return {
        rows: [
          plain,
          withStall,
          {
            name: "bare client → receiver",
            figures: { "deliveries/s": round(median(ceiling)), "p50 ms": null, "p99 ms": null },
          },
        ],
        notes: [
          `database: ${rig.database}; latency at ${LATENCY_RATE} events/s, one event per transaction; throughput with ` +
            `${BATCH} events per transaction and a backlog of at most ${BACKLOG}; the stalled tenant gets ${STALLED_RATE} events/s`,
          `goal: at least ${GOALS.deliveriesPerSecond} deliveries/s and p99 under ${GOALS.p99Ms} ms, unchanged by the stalled ` +
            `tenant — ${meets(plain) && meets(withStall) ? "met" : "MISSED"}`,
          "the bare client row is 16 keep-alive connections posting to the same receiver: the machine's ceiling",
        ],
      };
    } finally {
      await stopStall().catch(() => {});
      await receiver.stop();
      await rig.stop();
    }
  },
};

export default scenario;

await runIfMain(import.meta.url, scenario);
