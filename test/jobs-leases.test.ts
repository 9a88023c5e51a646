import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { serviceMigrations } from "../src/context.js";
import { type Db, openDb } from "../src/platform/db/index.js";
import { enqueue, type JobHandler } from "../src/platform/jobs.js";
import { migrate } from "../src/platform/migrate.js";
import { runTs } from "./support/children/process.js";
import { SERVER_URL } from "./support/db.js";
import { jobsHarness, type Run, recording, waitFor } from "./support/jobs.js";

const h = jobsHarness();
const jobRows = (kind: string) => h.jobRows(kind);

describe("leases", () => {
  it("keep renewing a long job's lease so that no other worker runs it again", async () => {
    const runs: Run[] = [];
    const slow = () => [recording("test.long", runs, () => delay(2500))];
    await enqueue(h.db.root, { kind: "test.long", payload: { n: 1 } });
    await h.startWorker(await h.processDb(), slow(), { leaseSeconds: 1, pollMs: 50 });
    await waitFor(() => runs.length === 1);
    await h.startWorker(await h.processDb(), slow(), { leaseSeconds: 1, pollMs: 50 });
    await waitFor(async () => (await jobRows("test.long")).length === 0);
    expect(runs).toHaveLength(1);
  });

  it("keep renewing leases while stopping, until their running jobs end", async () => {
    const runs: Run[] = [];
    const slow = () => [recording("test.stopping", runs, () => delay(2500))];
    await enqueue(h.db.root, { kind: "test.stopping", payload: { n: 1 } });
    const first = await h.startWorker(await h.processDb(), slow(), { leaseSeconds: 1, pollMs: 50 });
    await waitFor(() => runs.length === 1);
    await h.startWorker(await h.processDb(), slow(), { leaseSeconds: 1, pollMs: 50 });
    await first.stop();
    expect(await jobRows("test.stopping")).toEqual([]);
    expect(runs).toHaveLength(1);
  });
});

describe.runIf(SERVER_URL)("workers on PostgreSQL", () => {
  it("keep renewing a plain job's lease while a transactional job of theirs holds its row", async () => {
    const runs: Run[] = [];
    const handlers = (): JobHandler[] => [
      recording("test.renew-plain", runs, () => delay(2500)),
      {
        kind: "test.renew-tx",
        mode: "transaction",
        async run() {
          await delay(2500);
        },
      },
    ];
    await enqueue(
      h.db.root,
      { kind: "test.renew-tx", payload: { n: 1 } },
      { kind: "test.renew-plain", payload: { n: 2 } },
    );
    await h.startWorker(await h.processDb(), handlers(), { leaseSeconds: 1, pollMs: 50 });
    await waitFor(() => runs.length === 1);
    await h.startWorker(await h.processDb(), handlers(), { leaseSeconds: 1, pollMs: 50 });
    await waitFor(async () => (await jobRows("test.renew-plain")).length === 0);
    await waitFor(async () => (await jobRows("test.renew-tx")).length === 0);
    expect(runs).toHaveLength(1);
  });
});

describe("a worker killed with SIGKILL", () => {
  // Long enough that the new worker is watching well before the lease ends, also on the embedded
  // database, where the parent must first reopen the directory the dead child held.
  const LEASE_SECONDS = SERVER_URL ? 3 : 5;

  it("leaves its jobs to be run again once their lease has run out, and not before", async () => {
    let dataDir: string | undefined;
    let on: Db;
    const held = ["test.held-plain", "test.held-tx"];
    if (h.database.url) {
      on = h.db;
    } else {
      // The embedded database belongs to one process at a time: the directory is handed to the
      // child, and taken back once it is dead.
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cds-jobs-kill-"));
      const setup = await openDb({ dataDir });
      await migrate(setup, serviceMigrations());
      on = setup;
    }
    try {
      await enqueue(
        on.root,
        { kind: "test.held-plain", payload: { n: 1 } },
        { kind: "test.held-tx", payload: { n: 2 } },
      );
      if (dataDir) await on.close();

      const child = runTs("test/support/children/job-holder.ts", [String(LEASE_SECONDS)], {
        DATABASE_URL: h.database.url ?? "",
        CDS_DATA_DIR: dataDir,
      });
      const childWorker = (await child.line(/^running test\.held-plain \d+ 1 (\S+)$/))[1];
      await child.line(/^running test\.held-tx \d+ 1 /);
      child.kill("SIGKILL");
      expect(await child.exited).toBe("SIGKILL");

      if (dataDir) on = await openDb({ dataDir });
      const leased = await on.root
        .selectFrom("jobs")
        .selectAll()
        .where("kind", "in", held)
        .orderBy("kind")
        .execute();
      expect(leased.map((j) => [j.kind, j.attempts, j.locked_by])).toEqual([
        ["test.held-plain", 1, childWorker],
        ["test.held-tx", 1, childWorker],
      ]);
      const leaseEnds = Math.max(...leased.map((j) => j.run_at.getTime()));

      const runs: Run[] = [];
      const watchingFrom = Date.now();
      const worker = await h.startWorker(
        on,
        [
          recording("test.held-plain", runs),
          { ...recording("test.held-tx", runs), mode: "transaction" } as JobHandler,
        ],
        { pollMs: 50 },
      );
      // The scenario only proves "not before" if the new worker was watching before the lease ended.
      expect(watchingFrom).toBeLessThan(leaseEnds);
      await waitFor(() => runs.length === 2, 30_000);
      for (const run of runs) {
        expect(run.attempt).toBe(2);
        expect(run.at).toBeGreaterThanOrEqual(leaseEnds - 50);
      }
      expect(runs.map((r) => r.payload.n).sort()).toEqual([1, 2]);
      await waitFor(async () => {
        const left = await on.root.selectFrom("jobs").select("id").where("kind", "in", held).execute();
        return left.length === 0;
      });
      await worker.stop();
    } finally {
      if (dataDir) {
        await on.close().catch(() => {});
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    }
  }, 90_000);
});
