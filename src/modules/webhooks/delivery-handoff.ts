// New deliveries handed from the transaction that inserts them to the same process's delivery
// worker (decision 0007, as decision 0028 hands new cases to the starter). The worker attaches
// itself here, per database, while it runs; the statement that inserts deliveries then writes as
// many as it takes with their first attempt leased to it (`handed_until`), wakes no one, and the
// worker gets them once the transaction has committed. The rest, and every delivery of a process
// without a delivery worker, are inserted for any worker's claim, as before.
import type { Db } from "../../platform/db/index.js";
import type { AttemptContext } from "./deliveries.repo.js";

export interface Endpoint {
  tenantId: string;
  webhookKey: string;
}

/** The worker's side: which new deliveries it takes, and the taken ones once committed. */
export interface DeliveryTaker {
  /** How long a handed attempt's lease runs before the worker renews it. */
  readonly leaseSeconds: number;
  /** Which of the deliveries about to be inserted it takes (reserving a slot for each). */
  reserve(endpoints: Endpoint[]): boolean[];
  /**
   * The deliveries inserted leased to it, once committed (none if the transaction rolled back),
   * and the endpoints of every reservation made for them (`reserve`'s true ones), now settled.
   */
  take(handed: AttemptContext[], reserved: Endpoint[]): void;
}

const takers = new WeakMap<Db, DeliveryTaker>();

/** A worker attaches when it starts; with several on one database in a process, the first. */
export function attachTaker(db: Db, taker: DeliveryTaker): void {
  if (!takers.has(db)) takers.set(db, taker);
}

/** The worker detaches before it stops: deliveries inserted after that are left to any claim. */
export function detachTaker(db: Db, taker: DeliveryTaker): void {
  if (takers.get(db) === taker) takers.delete(db);
}

export function takerOf(db: Db): DeliveryTaker | undefined {
  return takers.get(db);
}

/** The attempt a handed delivery makes: its first, counted by its lease (claim turn 1). */
export function handedAttempt(
  row: Pick<AttemptContext, "id" | "tenant_id" | "webhook_key" | "body" | "config">,
): AttemptContext {
  return { ...row, turn: 1, attempt: 1, recorded_attempts: 0, interrupted: 0, prev_attempt_at: null };
}
