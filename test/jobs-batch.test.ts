import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import type { Tx } from "../src/platform/db/index.js";
import {
  type ClaimedJob,
  type ClaimToken,
  type Continuation,
  enqueue,
  type JobHandler,
  type JobSpec,
} from "../src/platform/jobs.js";
import { jobsHarness, waitFor } from "./support/jobs.js";

const h = jobsHarness();

async function effects(kind: string): Promise<number[]> {
  const { rows } = await sql<{
    n: number;
  }>`SELECT n FROM job_effects WHERE kind = ${kind} ORDER BY n`.execute(h.db.root);
  return rows.map((r) => r.n);
}

/** A follow-up job written already claimed by the worker holding `claim`, as a continuation. */
async function insertClaimed(
  tx: Tx,
  kind: string,
  payload: Record<string, unknown>,
  claim: ClaimToken,
): Promise<Continuation> {
  const { rows } = await sql<{ id: number }>`
    INSERT INTO jobs (kind, payload, locked_by, locked_at, run_at, attempts)
    VALUES (${kind}, ${JSON.stringify(payload)}::jsonb, ${claim.workerId}, now(),
            now() + make_interval(secs => ${claim.leaseSeconds}), 1)
    RETURNING id`.execute(tx);
  return { id: rows[0]?.id as number, kind, payload, jobKey: null, maxAttempts: 25 };
}

/** A batch handler that records each job's effect and the size of each batch it ran. */
function batchRecorder(
  kind: string,
  batches: number[][],
  options: { batchSize?: number; failOn?: number; next?: (job: ClaimedJob) => JobSpec | undefined } = {},
): JobHandler {
  return {
    kind,
    mode: "batch",
    batchSize: options.batchSize ?? 8,
    async run(jobs, tx, claim) {
      const ns = jobs.map((j) => j.payload.n as number);
      batches.push(ns);
      if (options.failOn !== undefined && ns.includes(options.failOn))
        throw new Error(`job ${options.failOn} is bad`);
      for (const n of ns) await sql`INSERT INTO job_effects (kind, n) VALUES (${kind}, ${n})`.execute(tx);
      const continuations: Continuation[] = [];
      for (const job of jobs) {
        const spec = options.next?.(job);
        if (!spec) continue;
        continuations.push(await insertClaimed(tx, spec.kind, spec.payload, claim));
      }
      return continuations;
    },
  };
}

describe("batch handlers", () => {
  it("run the jobs they hold in batches of at most batchSize, each job's effect exactly once", async () => {
    const batches: number[][] = [];
    await enqueue(
      h.db.root,
      ...Array.from({ length: 50 }, (_, n) => ({ kind: "test.batch", payload: { n } })),
    );
    await h.startWorker(h.db, [batchRecorder("test.batch", batches, { batchSize: 8 })], { concurrency: 2 });
    await waitFor(async () => (await effects("test.batch")).length === 50);
    expect(await effects("test.batch")).toEqual(Array.from({ length: 50 }, (_, n) => n));
    expect(Math.max(...batches.map((b) => b.length))).toBeLessThanOrEqual(8);
    expect(batches.some((b) => b.length > 1)).toBe(true);
    await waitFor(async () => (await h.jobRows("test.batch")).length === 0);
  });

  it("run each job of a failing batch on its own, so that only the bad job fails", async () => {
    const batches: number[][] = [];
    await enqueue(
      h.db.root,
      ...Array.from({ length: 6 }, (_, n) => ({ kind: "test.poison", payload: { n }, maxAttempts: 1 })),
    );
    await h.startWorker(h.db, [batchRecorder("test.poison", batches, { batchSize: 6, failOn: 3 })], {
      concurrency: 1,
    });
    await waitFor(async () => (await effects("test.poison")).length === 5);
    expect(await effects("test.poison")).toEqual([0, 1, 2, 4, 5]);
    await waitFor(async () => (await h.jobRows("test.poison")).length === 1);
    const [bad] = await h.jobRows("test.poison");
    expect(bad?.payload).toEqual({ n: 3 });
    expect(bad?.failed_at).not.toBeNull();
    expect(bad?.last_error).toMatch(/job 3 is bad/);
  });

  it("fail, without running it, a job whose lease expired on every one of its attempts", async () => {
    const batches: number[][] = [];
    await enqueue(
      h.db.root,
      { kind: "test.exhausted", payload: { n: 1 }, maxAttempts: 2 },
      { kind: "test.exhausted", payload: { n: 2 }, maxAttempts: 2 },
    );
    // Job 1 was claimed twice by workers that died with it: its last lease has run out.
    await sql`
      UPDATE jobs SET attempts = 2, locked_by = 'a-dead-worker', locked_at = now() - interval '1 minute'
      WHERE kind = 'test.exhausted' AND payload->>'n' = '1'`.execute(h.db.root);
    await h.startWorker(h.db, [batchRecorder("test.exhausted", batches)], { concurrency: 1 });
    await waitFor(async () => (await h.jobRows("test.exhausted")).every((j) => j.failed_at !== null));
    expect(await effects("test.exhausted")).toEqual([2]);
    const rows = await h.jobRows("test.exhausted");
    expect(rows).toHaveLength(1);
    expect(rows[0]?.payload).toEqual({ n: 1 });
    expect(rows[0]?.last_error).toMatch(/lease expired on every one of 2 attempts/);
  });

  it("run the continuations they hand back in the same slot, without a claim", async () => {
    const batches: number[][] = [];
    const handler = batchRecorder("test.chain", batches, {
      batchSize: 4,
      next: (job) => {
        const n = job.payload.n as number;
        return n < 40 ? { kind: "test.chain", payload: { n: n + 10 } } : undefined;
      },
    });
    await enqueue(
      h.db.root,
      ...Array.from({ length: 4 }, (_, n) => ({ kind: "test.chain", payload: { n } })),
    );
    // A long poll, and one slot: only continuations can carry the chain on in time.
    await h.startWorker(h.db, [handler], { concurrency: 1, pollMs: 60_000 });
    await waitFor(async () => (await effects("test.chain")).length === 20, 10_000);
    expect(await effects("test.chain")).toEqual(
      [0, 1, 2, 3].flatMap((start) => [0, 10, 20, 30, 40].map((d) => start + d)).sort((a, b) => a - b),
    );
    expect(batches).toEqual([
      [0, 1, 2, 3],
      [10, 11, 12, 13],
      [20, 21, 22, 23],
      [30, 31, 32, 33],
      [40, 41, 42, 43],
    ]);
  });
});

describe("plain handlers", () => {
  it("run the continuation their own transaction wrote in the same slot, without a claim", async () => {
    const ran: number[] = [];
    const handler: JobHandler = {
      kind: "test.plain-chain",
      mode: "plain",
      async run(job, db, claim) {
        const n = job.payload.n as number;
        ran.push(n);
        // As an engine job applies its result: its own transaction deletes it and writes the next.
        return db.transaction(async (tx) => {
          await sql`DELETE FROM jobs WHERE id = ${job.id}`.execute(tx);
          await sql`INSERT INTO job_effects (kind, n) VALUES ('test.plain-chain', ${n})`.execute(tx);
          if (n >= 4) return { applied: true, next: undefined };
          return { applied: true, next: await insertClaimed(tx, "test.plain-chain", { n: n + 1 }, claim) };
        });
      },
    };
    await enqueue(h.db.root, { kind: "test.plain-chain", payload: { n: 0 } });
    // A long poll, and one slot: only continuations can carry the chain on in time (each written
    // claimed, due a lease later, which no claim would take before then).
    await h.startWorker(h.db, [handler], { concurrency: 1, pollMs: 60_000 });
    await waitFor(async () => (await effects("test.plain-chain")).length === 5, 10_000);
    expect(await effects("test.plain-chain")).toEqual([0, 1, 2, 3, 4]);
    expect(ran).toEqual([0, 1, 2, 3, 4]);
    await waitFor(async () => (await h.jobRows("test.plain-chain")).length === 0);
  });
});
