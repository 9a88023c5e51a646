import type { BackgroundWorker } from "../../platform/app-types.js";
import { Batcher } from "../../platform/batcher.js";
import type { AppContext } from "../../platform/context.js";
import { uuid } from "../../platform/crypto.js";
import { settleWithin, type WorkerOptions } from "../../platform/jobs.js";
import { jobRuns, webhookClaims } from "../../platform/metrics.js";
import {
  type AttemptContext,
  claimDeliveries,
  giveBackHanded,
  type Outcome,
  recordOutcomes,
  renewClaims,
} from "./deliveries.repo.js";
import { attemptDelivery, backoffMs, outcomeOf } from "./delivery-attempt.js";
import { DeliveryGate } from "./delivery-gate.js";
import {
  attachTaker,
  type DeliveryTaker,
  detachTaker,
  type Endpoint,
  type Reservation,
} from "./delivery-handoff.js";
import { DELIVERIES_CHANNEL } from "./delivery-queue.js";
import { senderReady } from "./sender-thread.js";

/** Deliveries one claim takes at most. */
export const CLAIM_BATCH = 64;
/**
 * How long an attempt's outcome waits for others to be written with. A crash in that time makes
 * the attempt again (at least once); at a few hundred deliveries a second it saves most of a
 * transaction per delivery.
 */
const OUTCOME_LINGER_MS = 50;

/**
 * The delivery worker (decision 0007): claims due deliveries from `webhook_deliveries` in batches,
 * makes their attempts on slots of its own (`CDS_WEBHOOK_CONCURRENCY`), each endpoint in its lane,
 * and writes the outcomes of the attempts that finish together in one statement. It wakes when an
 * event's transaction commits (NOTIFY), when one of its own retries comes due, when a slot frees
 * while a claim may have left deliveries behind (it took some, or a notification came meanwhile),
 * when a slot of a lane the last claim passed over (full or stalled) frees, and otherwise polls
 * (`CDS_JOB_POLL_MS`) for the retries of other processes. Any other slot that frees claims
 * nothing: an empty claim costs a transaction of its own, and beside a stalled endpoint it would
 * come with every other tenant's delivery.
 *
 * While it runs, it also takes the new deliveries of its own process's transactions, as many as
 * it has free slots and their endpoints' lanes have room (delivery-handoff.ts): their first
 * attempts are leased to it by the insert, and start when the transaction commits, with no claim.
 */
export class DeliveryWorker implements BackgroundWorker, DeliveryTaker {
  readonly #ctx: AppContext;
  readonly #concurrency: number;
  /** The only worker on its database (the embedded one is a single process's). */
  readonly #sole: boolean;
  readonly #leaseSeconds: number;
  readonly #pollMs: number;
  readonly #stopTimeoutMs: number;
  readonly #gate: DeliveryGate;
  /** Open entries of each live claim of this worker, whose leases it renews. */
  readonly #claims = new Map<string, number>();
  /** Handed deliveries whose first attempt is in flight here, whose leases it renews. */
  readonly #handed = new Set<string>();
  /** Slots reserved for deliveries being inserted by this process's transactions. */
  #reserved = 0;
  /** The same, per endpoint: they take room in its lane before they arrive. */
  readonly #reservedFor = new Map<string, number>();
  /** Attempts waiting for their answers, each holding a slot. */
  readonly #running = new Set<Promise<unknown>>();
  /** Outcomes being recorded (their attempts' slots are free). */
  readonly #recording = new Set<Promise<void>>();
  readonly #outcomes: Batcher<Outcome, void>;
  #stopped = true;
  #wake: (() => void) | undefined;
  #woken = false;
  /** Deliveries may be due that no claim took: a slot that frees claims again. */
  #owed = true;
  /** The lanes the last claim passed over (full or stalled): a slot of theirs that frees claims again. */
  #passedOver = new Set<string>();
  /** Notifications and due retries so far: one during a claim leaves the claim owing. */
  #notices = 0;
  #loop: Promise<void> | undefined;
  #renewal: NodeJS.Timeout | undefined;
  #unlisten: (() => Promise<void>) | undefined;
  readonly #timers = new Set<NodeJS.Timeout>();

  constructor(ctx: AppContext, options: WorkerOptions) {
    this.#ctx = ctx;
    this.#concurrency = ctx.config.webhookConcurrency;
    this.#sole = ctx.db.kind === "pglite";
    this.#leaseSeconds = options.leaseSeconds;
    this.#pollMs = options.pollMs;
    this.#stopTimeoutMs = options.stopTimeoutMs ?? 10_000;
    this.#gate = new DeliveryGate({
      perEndpoint: ctx.config.webhookEndpointConcurrency,
      // A lane never needs more than the worker has.
      maxPerEndpoint: Math.min(ctx.config.webhookEndpointConcurrencyMax, this.#concurrency),
    });
    this.#outcomes = new Batcher(
      (outcomes) => recordOutcomes(ctx.db.root, outcomes).then(() => outcomes.map(() => undefined)),
      // Nobody waits on an outcome's record: it waits a moment for others (decision 0031).
      { maxBatch: 256, lanes: 1, lingerMs: OUTCOME_LINGER_MS },
    );
  }

  get runningCount(): number {
    return this.#running.size;
  }

  get leaseSeconds(): number {
    return this.#leaseSeconds;
  }

  reserve(endpoints: Endpoint[]): Reservation[] {
    let free = this.#stopped ? 0 : this.#concurrency - this.#running.size - this.#reserved;
    if (free <= 0) return endpoints.map(() => "claim");
    // A lane takes what it would let in or let wait for its slots, as a claimed attempt would be:
    // a burst of one endpoint's events, more than its floor, is sent without a claim. A stalled
    // lane takes none: its deliveries wait in the table, unwritten, as a claim passes over them.
    // The only worker on its database claims those itself when the lane has room: nobody else
    // is woken for them, and this worker's own claim would pass over them.
    return endpoints.map((e) => {
      const key = endpointKey(e);
      const held = this.#reservedFor.get(key) ?? 0;
      if (free <= 0) return "claim";
      if (this.#gate.accepts(e.tenantId, e.webhookKey) - held <= 0) return this.#sole ? "later" : "claim";
      this.#reservedFor.set(key, held + 1);
      this.#reserved++;
      free--;
      return "take";
    });
  }

  take(handed: AttemptContext[], reserved: Endpoint[], later: Endpoint[]): void {
    this.#reserved -= reserved.length;
    for (const e of reserved) {
      const key = endpointKey(e);
      const held = (this.#reservedFor.get(key) ?? 1) - 1;
      if (held > 0) this.#reservedFor.set(key, held);
      else this.#reservedFor.delete(key);
    }
    if (handed.length > 0 && this.#stopped) {
      // Stopped meanwhile: given back to any worker's claim, no attempt counted.
      giveBackHanded(
        this.#ctx.db.root,
        handed.map((at) => at.id),
      ).catch((err) =>
        this.#ctx.log.warn(
          { err },
          "giving back handed webhook deliveries failed; their leases will run out",
        ),
      );
    } else {
      for (const at of handed) {
        this.#handed.add(at.id);
        this.#start(null, at);
      }
    }
    // Those it said it would claim are in the table now: claimed at once if their lane has room
    // (a claim takes a lane's room, not its waiters), else when a slot of their lane frees.
    for (const e of later) {
      if (this.#gate.room(e.tenantId, e.webhookKey) > 0) this.#notice();
      else this.#passedOver.add(endpointKey(e));
    }
  }

  /** The sending thread loaded before the worker takes any delivery (decision 0039). */
  prepare(): Promise<void> {
    return senderReady();
  }

  async start(): Promise<void> {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#unlisten = await this.#ctx.db.listen(DELIVERIES_CHANNEL, () => this.#notice());
    attachTaker(this.#ctx.db, this);
    this.#renewal = setInterval(() => void this.#renew(), Math.max(100, (this.#leaseSeconds * 1000) / 3));
    this.#loop = this.#run();
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    detachTaker(this.#ctx.db, this);
    this.#poke();
    await this.#loop;
    // Attempts in flight finish and are recorded; past the timeout they are left to their leases.
    const deadline = performance.now() + this.#stopTimeoutMs;
    await settleWithin(this.#running, this.#stopTimeoutMs);
    await settleWithin(this.#recording, Math.max(0, deadline - performance.now()));
    clearInterval(this.#renewal);
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    await this.#unlisten?.();
  }

  #poke(): void {
    this.#woken = true;
    this.#wake?.();
  }

  /** Something new is due (a notification, a retry): claimed now, or once a slot frees. */
  #notice(): void {
    this.#notices++;
    this.#owed = true;
    this.#poke();
  }

  /** Wakes the loop when this worker's own retry comes due. */
  #wakeIn(ms: number): void {
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      this.#notice();
    }, ms + 5);
    timer.unref();
    this.#timers.add(timer);
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      const free = this.#concurrency - this.#running.size - this.#reserved;
      if (free > 0) {
        this.#woken = false;
        let claimed = 0;
        try {
          claimed = await this.#claim(Math.min(free, CLAIM_BATCH));
        } catch (err) {
          this.#owed = true;
          this.#ctx.log.error({ err }, "claiming webhook deliveries failed");
        }
        // A full batch: more are likely due. Woken meanwhile: something new is.
        if ((claimed === Math.min(free, CLAIM_BATCH) && claimed > 0) || this.#woken) continue;
      }
      // With every slot busy, only a slot freeing (or stop) wakes the loop to claim again.
      this.#woken = false;
      if (this.#stopped) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.#pollMs);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = undefined;
    }
  }

  async #claim(limit: number): Promise<number> {
    const claimId = uuid();
    const notices = this.#notices;
    const full = this.#gate.full();
    // A claim takes the floor's worth of an endpoint, or a grown lane's room: fed a floor's worth
    // per claim, a lane fed by claims alone (a backlog, retries) would not keep its width busy.
    const claimed = await claimDeliveries(this.#ctx.db, claimId, limit, this.#leaseSeconds, {
      full,
      wide: this.#gate.wide(),
      perEndpoint: this.#ctx.config.webhookEndpointConcurrency,
    });
    // What it took may have had more behind it (its limit, an endpoint's room), and what it passed
    // over or what was notified meanwhile is still due.
    this.#owed = claimed.length > 0 || this.#notices !== notices;
    this.#passedOver = new Set(full.map(endpointKey));
    webhookClaims.inc({ outcome: claimed.length > 0 ? "took" : "empty" });
    if (claimed.length === 0) return 0;
    this.#claims.set(claimId, claimed.length);
    for (const at of claimed) this.#start(claimId, at);
    return claimed.length;
  }

  /**
   * Starts an attempt of a claim's (or, without one, a handed delivery's) on a slot. The slot
   * frees when the attempt has its answer; its outcome is recorded after that, with others.
   */
  #start(claimId: string | null, at: AttemptContext): void {
    const started = performance.now();
    const run = this.#attempt(at);
    this.#running.add(run);
    void run.then((outcome) => {
      this.#running.delete(run);
      const recording = this.#record(claimId, at, outcome, started).finally(() => {
        this.#recording.delete(recording);
        if (claimId === null) this.#handed.delete(at.id);
      });
      this.#recording.add(recording);
      // A slot freed, and a slot of its endpoint's lane: deliveries passed over for a full lane
      // may be claimable now (claims are one at a time, so a burst of these costs a few claims).
      if (
        this.#owed ||
        this.#passedOver.has(endpointKey({ tenantId: at.tenant_id, webhookKey: at.webhook_key }))
      ) {
        this.#poke();
      }
    });
  }

  async #attempt(at: AttemptContext): Promise<Outcome> {
    try {
      return await attemptDelivery(this.#ctx, at, () => this.#gate.enter(at.tenant_id, at.webhook_key));
    } catch (err) {
      // Nothing was sent, or nothing is known of it: it counts as an attempt, and is retried.
      this.#ctx.log.warn({ err, deliveryId: at.id }, "webhook attempt failed before its outcome was known");
      const last = at.config !== null && at.attempt >= at.config.max_attempts;
      return outcomeOf(at, {
        status: last ? "failed" : "pending",
        attemptCount: at.attempt,
        sent: null,
        lastError: err instanceof Error ? err.message : String(err),
        retryInMs: last ? null : backoffMs(at.attempt),
        failures: [],
      });
    }
  }

  async #record(
    claimId: string | null,
    at: AttemptContext,
    outcome: Outcome,
    started: number,
  ): Promise<void> {
    if (claimId !== null) {
      const open = (this.#claims.get(claimId) ?? 1) - 1;
      if (open === 0) {
        this.#claims.delete(claimId);
        outcome.claimDone = claimId;
      } else this.#claims.set(claimId, open);
    }
    try {
      await this.#outcomes.add(outcome);
      jobRuns.observe(
        { kind: "webhooks.deliver", outcome: outcome.status === "failed" ? "failed" : "done" },
        (performance.now() - started) / 1000,
      );
      if (outcome.retryInMs !== null) this.#wakeIn(outcome.retryInMs);
    } catch (err) {
      // The claim's (or hand-off's) lease runs out: the attempt counts as interrupted and the delivery comes back.
      this.#ctx.log.error({ err, deliveryId: at.id }, "recording a webhook attempt failed");
    }
  }

  async #renew(): Promise<void> {
    try {
      await renewClaims(this.#ctx.db.root, [...this.#claims.keys()], [...this.#handed], this.#leaseSeconds);
    } catch (err) {
      this.#ctx.log.warn({ err }, "renewing webhook claims failed");
    }
  }
}

function endpointKey(e: Endpoint): string {
  return `${e.tenantId}\u0000${e.webhookKey}`;
}
