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

/**
 * What the worker says of a delivery about to be inserted: it takes it (a slot is reserved);
 * it will claim it itself once its endpoint's lane has room (`later`: the worker is the only one
 * on its database, so no other needs waking for it); or it leaves it to any worker's claim.
 */
export type Reservation = "take" | "later" | "claim";

/** The worker's side: which new deliveries it takes, and the taken ones once committed. */
export interface DeliveryTaker {
  /** How long a handed attempt's lease runs before the worker renews it. */
  readonly leaseSeconds: number;
  /** What it does with each of the deliveries about to be inserted (reserving a slot for each it takes). */
  reserve(endpoints: Endpoint[]): Reservation[];
  /**
   * The deliveries inserted leased to it, once committed (none if the transaction rolled back),
   * the endpoints of every reservation made for them (`reserve`'s `take`), now settled, and the
   * endpoints of the committed deliveries it said it would claim `later`.
   */
  take(handed: AttemptContext[], reserved: Endpoint[], later: Endpoint[]): void;
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
  // One object literal, not a spread of `row` (decision 0038).
  return {
    id: row.id,
    tenant_id: row.tenant_id,
    webhook_key: row.webhook_key,
    body: row.body,
    turn: 1,
    attempt: 1,
    recorded_attempts: 0,
    interrupted: 0,
    prev_attempt_at: null,
    config: row.config,
  };
}
