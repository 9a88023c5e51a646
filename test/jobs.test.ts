import { setTimeout as delay } from "node:timers/promises";
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import {
  defaultBackoffMs,
  enqueue,
  type JobHandler,
  type JobWorker,
  PermanentJobError,
  RescheduleJob,
} from "../src/platform/jobs.js";
import { jobsHarness, type Run, recording, waitFor } from "./support/jobs.js";

const h = jobsHarness();
const jobRows = (kind: string) => h.jobRows(kind);

describe("enqueue", () => {
  it("leaves no job behind when the enqueuing transaction rolls back", async () => {
    await expect(
      h.db.transaction(async (tx) => {
        await enqueue(tx, { kind: "test.rollback", payload: { n: 1 } });
        throw new Error("the change failed");
      }),
    ).rejects.toThrow("the change failed");
    expect(await jobRows("test.rollback")).toEqual([]);

    await h.db.transaction((tx) => enqueue(tx, { kind: "test.rollback", payload: { n: 2 } }));
    const rows = await jobRows("test.rollback");
    expect(rows.map((r) => r.payload)).toEqual([{ n: 2 }]);
    expect(rows[0]).toMatchObject({ attempts: 0, max_attempts: 25, failed_at: null, locked_by: null });
  });

  it("keeps one job per jobKey while it is queued or running, and accepts the key again once it is done", async () => {
    const runs: Run[] = [];
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    await enqueue(
      h.db.root,
      { kind: "test.keyed", payload: { n: 1 }, jobKey: "case-1" },
      { kind: "test.keyed", payload: { n: 0 }, jobKey: "case-1" },
    );
    await enqueue(
      h.db.root,
      { kind: "test.keyed", payload: { n: 2 }, jobKey: "case-1" },
      { kind: "test.keyed", payload: { n: 3 }, jobKey: "case-2" },
    );
    expect((await jobRows("test.keyed")).map((r) => [r.job_key, r.payload])).toEqual([
      ["case-1", { n: 1 }],
      ["case-2", { n: 3 }],
    ]);

    await h.startWorker(h.db, [
      recording("test.keyed", runs, (job) => (job.jobKey === "case-1" ? released : undefined)),
    ]);
    await waitFor(() => runs.length === 2);
    // Running: the key is still taken.
    await enqueue(h.db.root, { kind: "test.keyed", payload: { n: 4 }, jobKey: "case-1" });
    release();
    await waitFor(async () => (await jobRows("test.keyed")).length === 0);
    expect(runs.map((r) => r.payload.n).sort()).toEqual([1, 3]);

    await enqueue(h.db.root, { kind: "test.keyed", payload: { n: 5 }, jobKey: "case-1" });
    await waitFor(() => runs.length === 3);
    expect(runs[2]?.payload).toEqual({ n: 5 });
  });

  it("accepts the key of a job that failed for good again, as a fresh job", async () => {
    const runs: Run[] = [];
    await enqueue(h.db.root, { kind: "test.key-failed", payload: { n: 1 }, jobKey: "k", maxAttempts: 1 });
    await h.startWorker(h.db, [
      recording("test.key-failed", runs, (job) => {
        if (job.payload.n === 1) throw new PermanentJobError("bad input");
      }),
    ]);
    await waitFor(async () => (await jobRows("test.key-failed"))[0]?.failed_at != null);
    await enqueue(h.db.root, { kind: "test.key-failed", payload: { n: 2 }, jobKey: "k" });
    await waitFor(async () => (await jobRows("test.key-failed")).length === 0);
    expect(runs.map((r) => [r.payload.n, r.attempt])).toEqual([
      [1, 1],
      [2, 1],
    ]);
  });
});

describe("workers", () => {
  it("run each of 2,000 jobs exactly once with 4 workers at once", async () => {
    const counts = new Map<string, number>();
    const byWorker = new Map<string, number>();
    const handlers = (name: () => string): JobHandler[] => [
      {
        kind: "test.bulk-tx",
        mode: "transaction",
        async run(job, tx) {
          await sql`INSERT INTO job_effects (kind, n) VALUES ('bulk-tx', ${job.payload.n as number})`.execute(
            tx,
          );
          counts.set(`tx:${job.payload.n}`, (counts.get(`tx:${job.payload.n}`) ?? 0) + 1);
          byWorker.set(name(), (byWorker.get(name()) ?? 0) + 1);
        },
      },
      {
        kind: "test.bulk-plain",
        mode: "plain",
        async run(job) {
          counts.set(`plain:${job.payload.n}`, (counts.get(`plain:${job.payload.n}`) ?? 0) + 1);
          byWorker.set(name(), (byWorker.get(name()) ?? 0) + 1);
        },
      },
    ];
    for (let i = 0; i < 4; i++) {
      const on = await h.processDb();
      let worker: JobWorker | undefined;
      worker = await h.startWorker(
        on,
        handlers(() => worker?.id ?? "?"),
        { concurrency: 8, pollMs: 50 },
      );
    }
    for (let batch = 0; batch < 4; batch++) {
      await h.db.transaction((tx) =>
        enqueue(
          tx,
          ...Array.from({ length: 500 }, (_, i) => {
            const n = batch * 500 + i;
            return { kind: n % 2 === 0 ? "test.bulk-tx" : "test.bulk-plain", payload: { n } };
          }),
        ),
      );
    }
    await waitFor(() => counts.size === 2000, 60_000);
    await waitFor(async () => {
      const left = await h.db.root
        .selectFrom("jobs")
        .select(h.db.root.fn.countAll<number>().as("n"))
        .where("kind", "in", ["test.bulk-tx", "test.bulk-plain"])
        .executeTakeFirstOrThrow();
      return left.n === 0;
    });
    expect([...counts.values()].every((c) => c === 1)).toBe(true);
    expect([...counts.keys()].sort()).toEqual(
      Array.from({ length: 2000 }, (_, n) => `${n % 2 === 0 ? "tx" : "plain"}:${n}`).sort(),
    );
    const effects = await sql<{ n: number; distinct: number }>`
      SELECT count(*) AS n, count(DISTINCT n) AS distinct FROM job_effects WHERE kind = 'bulk-tx'`.execute(
      h.db.root,
    );
    expect(effects.rows).toEqual([{ n: 1000, distinct: 1000 }]);
    expect(byWorker.size).toBe(4);
    expect([...byWorker.values()].reduce((a, b) => a + b, 0)).toBe(2000);
  });

  it("do not run a job before its runAt", async () => {
    const runs: Run[] = [];
    // A long poll: the worker must wake for the due time on its own.
    await h.startWorker(await h.processDb(), [recording("test.scheduled", runs)], { pollMs: 60_000 });
    const runAt = new Date(Date.now() + 1200);
    await enqueue(h.db.root, { kind: "test.scheduled", payload: { n: 1 }, runAt });
    await enqueue(h.db.root, {
      kind: "test.scheduled",
      payload: { n: 2 },
      runAt: new Date(Date.now() - 60_000),
    });
    await waitFor(() => runs.length === 2);
    // The job already due runs first; the other not before its time.
    expect(runs.map((r) => r.payload.n)).toEqual([2, 1]);
    expect(runs[1]!.at).toBeGreaterThanOrEqual(runAt.getTime());
  });

  it("retry a failing job with its backoff and mark it failed after maxAttempts", async () => {
    const runs: Run[] = [];
    const backoffMs = (attempt: number) => 300 * attempt;
    await enqueue(h.db.root, { kind: "test.failing", payload: { n: 1 }, maxAttempts: 3 });
    await h.startWorker(h.db, [
      recording(
        "test.failing",
        runs,
        (job) => {
          throw new Error(`boom on attempt ${job.attempt}`);
        },
        { backoffMs },
      ),
    ]);
    await waitFor(async () => (await jobRows("test.failing"))[0]?.failed_at != null);
    expect(runs.map((r) => r.attempt)).toEqual([1, 2, 3]);
    for (let i = 1; i < runs.length; i++) {
      const gap = runs[i]!.at - runs[i - 1]!.at;
      // Never before its backoff; how long after depends on the machine.
      expect(gap).toBeGreaterThanOrEqual(backoffMs(i) - 10);
    }
    const [row] = await jobRows("test.failing");
    expect(row).toMatchObject({ attempts: 3, locked_by: null, last_error: "Error: boom on attempt 3" });
    expect(row?.failed_at).toBeInstanceOf(Date);
  });

  it("back off by default 1 s, doubling, capped at an hour", () => {
    expect([1, 2, 3, 4].map(defaultBackoffMs)).toEqual([1000, 2000, 4000, 8000]);
    expect(defaultBackoffMs(13)).toBe(3_600_000);
    expect(defaultBackoffMs(100)).toBe(3_600_000);
  });

  it("do not count a RescheduleJob as an attempt", async () => {
    const runs: Run[] = [];
    await enqueue(h.db.root, { kind: "test.rescheduled", payload: { n: 1 }, maxAttempts: 1 });
    await h.startWorker(h.db, [
      recording("test.rescheduled", runs, () => {
        if (runs.length < 4) throw new RescheduleJob(50, "not yet");
      }),
    ]);
    await waitFor(async () => runs.length === 4 && (await jobRows("test.rescheduled")).length === 0);
    expect(runs.map((r) => r.attempt)).toEqual([1, 1, 1, 1]);
    for (let i = 1; i < runs.length; i++) expect(runs[i]!.at - runs[i - 1]!.at).toBeGreaterThanOrEqual(45);
  });

  it("fail a job at once on PermanentJobError", async () => {
    const runs: Run[] = [];
    await enqueue(h.db.root, { kind: "test.permanent", payload: { n: 1 }, maxAttempts: 5 });
    await h.startWorker(h.db, [
      recording("test.permanent", runs, () => {
        throw new PermanentJobError("the payload names no case");
      }),
    ]);
    await waitFor(async () => (await jobRows("test.permanent"))[0]?.failed_at != null);
    expect(runs).toHaveLength(1);
    expect((await jobRows("test.permanent"))[0]).toMatchObject({
      attempts: 1,
      last_error: "PermanentJobError: the payload names no case",
    });
  });

  it("roll back a transactional job's writes when it fails, and keep them once it succeeds", async () => {
    let calls = 0;
    await enqueue(h.db.root, { kind: "test.tx-retry", payload: { n: 7 }, maxAttempts: 3 });
    await h.startWorker(h.db, [
      {
        kind: "test.tx-retry",
        mode: "transaction",
        backoffMs: () => 20,
        async run(job, tx) {
          calls++;
          await sql`INSERT INTO job_effects (kind, n) VALUES ('tx-retry', ${job.attempt})`.execute(tx);
          if (job.attempt < 3) throw new Error("not this time");
        },
      },
    ]);
    await waitFor(async () => (await jobRows("test.tx-retry")).length === 0);
    expect(calls).toBe(3);
    const effects = await sql`SELECT n FROM job_effects WHERE kind = 'tx-retry'`.execute(h.db.root);
    expect(effects.rows).toEqual([{ n: 3 }]);
  });

  it("are woken by NOTIFY at once even when their poll interval is a minute", async () => {
    const runs: Run[] = [];
    await h.startWorker(await h.processDb(), [recording("test.notified", runs)], { pollMs: 60_000 });
    // Let the worker find the queue empty and go to sleep for its minute.
    await delay(300);
    const enqueuedAt = Date.now();
    await h.db.transaction((tx) => enqueue(tx, { kind: "test.notified", payload: { n: 1 } }));
    await waitFor(() => runs.length === 1, 15_000);
    expect(runs[0]!.at - enqueuedAt).toBeLessThan(15_000);
  });
});
