import { sql } from "kysely";
import type { Executor } from "../db/index.js";

/**
 * Pushes the lease of the jobs a worker holds forward by `leaseSeconds`. A transactional job's
 * row is locked by its own open transaction until it ends (and no claim can take a locked row):
 * waiting for that lock would hold back every other renewal, so locked rows are skipped.
 */
export async function renewLeases(
  db: Executor,
  workerId: string,
  ids: number[],
  leaseSeconds: number,
): Promise<void> {
  await sql`UPDATE jobs SET run_at = now() + make_interval(secs => ${leaseSeconds})
      WHERE id IN (
        SELECT id FROM jobs WHERE locked_by = ${workerId} AND id = ANY(${ids})
        FOR UPDATE SKIP LOCKED
      )`.execute(db);
}

/** The worker no longer holds the job it is running: another took it when the lease ran out. */
export class LeaseLost extends Error {}
