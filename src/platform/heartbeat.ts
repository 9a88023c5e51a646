import os from "node:os";
import { sql } from "kysely";
import type { Db } from "./db/index.js";
import type { Log } from "./logger.js";

const BEAT_MS = 10_000;

/**
 * A worker process's row in `worker_heartbeats`, refreshed every 10 s, so that `/ready` on any
 * process can tell whether a worker runs somewhere. A worker that stops cleanly removes its row;
 * one that dies stops refreshing it and ages out of the 30 s window. Rows a day old are swept.
 */
export class WorkerHeartbeat {
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Db,
    private readonly workerId: string,
    private readonly log: Log,
  ) {}

  async start(): Promise<void> {
    await this.beat();
    this.#timer = setInterval(() => {
      this.beat().catch((err: unknown) => this.log.warn({ err }, "worker heartbeat failed"));
    }, BEAT_MS);
    this.#timer.unref();
  }

  async beat(): Promise<void> {
    await sql`
      INSERT INTO worker_heartbeats (worker_id, host, pid)
      VALUES (${this.workerId}, ${os.hostname()}, ${process.pid})
      ON CONFLICT (worker_id) DO UPDATE SET seen_at = now()`.execute(this.db.root);
    await sql`DELETE FROM worker_heartbeats WHERE seen_at < now() - interval '1 day'`.execute(this.db.root);
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await sql`DELETE FROM worker_heartbeats WHERE worker_id = ${this.workerId}`.execute(this.db.root);
  }
}
