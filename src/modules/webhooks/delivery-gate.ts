/**
 * Bounds the attempts in flight per endpoint (a tenant's webhook configuration) in this
 * process, so that one slow or dead endpoint cannot take the delivery worker's slots from
 * everyone else.
 *
 * Each endpoint's lane has a cap that adapts to how the endpoint answers, as TCP's window does
 * (additive increase, multiplicative decrease): it starts at the floor (`perEndpoint`), grows by
 * one with each quick success while the lane is at its cap, up to the ceiling (`maxPerEndpoint`),
 * and halves, never below the floor, with each answer that says the endpoint has had enough (slow,
 * none in time, no connection, a 5xx or a 429). An endpoint that keeps up gets as many attempts
 * as it answers; a slow or dead one holds the floor.
 *
 * An attempt that finds its endpoint full either waits here for a slot, when the endpoint is
 * answering quickly (a slot frees within moments), or is handed back to the queue to run
 * later, which costs one row update and holds no slot. An endpoint that has not answered
 * quickly for a while is stalled: its attempts are deferred at once, for about as long as its
 * attempts take, so a dead endpoint's backlog is revisited about once per timeout instead of
 * in a busy loop.
 *
 * This decides fairness, never correctness: the durable job is the delivery's truth, and
 * several processes each keep their own lanes.
 */
export interface GateOptions {
  /** Attempts in flight per endpoint: where each lane starts, and the least its cap falls to. */
  perEndpoint: number;
  /** The most a lane's cap grows to (at least `perEndpoint`, which it is unless given). */
  maxPerEndpoint?: number;
  /** Without a quick answer for this long, a full endpoint counts as stalled. */
  stallMs?: number;
  /** The longest an attempt is deferred at once. */
  maxDeferMs?: number;
  now?: () => number;
}

/**
 * What an attempt's answer says about its endpoint's capacity: `ok`, a 2xx; `overloaded`, no
 * complete answer in time, no connection, a 5xx or a 429; `neither`, anything else (a 3xx,
 * another 4xx: the endpoint answered, but says nothing of its load) or nothing sent.
 */
export type Answer = "ok" | "overloaded" | "neither";

export interface Slot {
  /**
   * Frees the slot; `durationMs` is how long the attempt took and `answer` how it ended (they
   * teach the lane its pace and its cap).
   */
  release(durationMs: number, answer: Answer): void;
}

/** A guess at an endpoint's latency before it has answered once. */
const INITIAL_LATENCY_MS = 100;
const MIN_DEFER_MS = 25;
/** Attempts that may wait here for a busy endpoint, per slot of that endpoint. */
const WAITERS_PER_SLOT = 4;
/** An idle lane's cap halves once per this long, back to the floor (then the lane is forgotten). */
const IDLE_HALVING_MS = 1000;

interface Lane {
  inFlight: number;
  /** Attempts it may have in flight now, from the floor to the ceiling. */
  cap: number;
  waiters: Array<(slot: boolean) => void>;
  /** Moving average of attempt durations. */
  latencyMs: number;
  /** The last quick answer, or when the lane last became busy. */
  progressAt: number;
  /** While nothing is in flight: since when its cap has not been halved for being idle. */
  idleSince: number;
  /** When its last attempt in flight ended. */
  emptiedAt: number;
}

export class DeliveryGate {
  readonly #lanes = new Map<string, Lane>();
  readonly #floor: number;
  readonly #ceiling: number;
  readonly #stallMs: number;
  readonly #maxDeferMs: number;
  readonly #now: () => number;

  constructor(options: GateOptions) {
    this.#floor = options.perEndpoint;
    this.#ceiling = Math.max(options.perEndpoint, options.maxPerEndpoint ?? options.perEndpoint);
    this.#stallMs = options.stallMs ?? 300;
    // An endpoint that comes back is noticed by its attempts in flight; its deferred backlog returns
    // within this, and a dead endpoint's backlog costs one row update per event per this long.
    this.#maxDeferMs = options.maxDeferMs ?? 60_000;
    this.#now = options.now ?? Date.now;
  }

  /**
   * The endpoints with every slot taken (or stalled with attempts in flight): not worth claiming
   * for. Called for each claim, it also brings every idle lane up to date (see `#current`).
   */
  full(): Array<{ tenantId: string; webhookKey: string }> {
    return this.#endpoints((lane, now) => {
      return lane.inFlight >= lane.cap || this.#stalled(lane, now) ? {} : undefined;
    });
  }

  /** The endpoints whose lanes have room for more than the floor now, and how much. */
  wide(): Array<{ tenantId: string; webhookKey: string; room: number }> {
    return this.#endpoints((lane, now) => {
      const room = this.#room(lane, now);
      return room > this.#floor ? { room } : undefined;
    });
  }

  /** The endpoints whose lanes, brought up to date, `pick` says something of, with what it says. */
  #endpoints<T extends object>(
    pick: (lane: Lane, now: number) => T | undefined,
  ): Array<{ tenantId: string; webhookKey: string } & T> {
    const now = this.#now();
    const found: Array<{ tenantId: string; webhookKey: string } & T> = [];
    for (const [key, held] of this.#lanes) {
      const lane = this.#current(key, held, now);
      const picked = lane && pick(lane, now);
      if (!picked) continue;
      const [tenantId, webhookKey] = key.split("\u0000") as [string, string];
      found.push({ tenantId, webhookKey, ...picked });
    }
    return found;
  }

  /** Attempts an endpoint's lane has room for now: none while it is stalled. */
  room(tenantId: string, webhookKey: string): number {
    const now = this.#now();
    const lane = this.#lane(laneKey(tenantId, webhookKey), now);
    return lane ? this.#room(lane, now) : this.#floor;
  }

  /**
   * Attempts an endpoint's lane would take now without deferring any. A lane that answers quickly
   * takes its room and as many as may wait for its slots; a slow one its room only; a stalled one
   * none; an endpoint without a lane here (new, or quiet for a while) its floor, as a claim would.
   */
  accepts(tenantId: string, webhookKey: string): number {
    const now = this.#now();
    const lane = this.#lane(laneKey(tenantId, webhookKey), now);
    if (!lane) return this.#floor;
    if (this.#stalled(lane, now)) return 0;
    const quick = lane.latencyMs < this.#stallMs;
    return (
      this.#room(lane, now) + (quick ? Math.max(0, lane.cap * WAITERS_PER_SLOT - lane.waiters.length) : 0)
    );
  }

  inFlight(tenantId: string, webhookKey: string): number {
    return this.#lanes.get(laneKey(tenantId, webhookKey))?.inFlight ?? 0;
  }

  /** The attempts an endpoint's lane may have in flight now (the floor for a lane it does not hold). */
  cap(tenantId: string, webhookKey: string): number {
    return this.#lane(laneKey(tenantId, webhookKey), this.#now())?.cap ?? this.#floor;
  }

  /** A slot for one attempt, or the delay after which to try again. */
  async enter(tenantId: string, webhookKey: string): Promise<Slot | { deferMs: number }> {
    const key = laneKey(tenantId, webhookKey);
    const now = this.#now();
    let lane = this.#lane(key, now);
    if (!lane) {
      lane = {
        inFlight: 0,
        cap: this.#floor,
        waiters: [],
        latencyMs: INITIAL_LATENCY_MS,
        progressAt: now,
        idleSince: now,
        emptiedAt: now,
      };
      this.#lanes.set(key, lane);
    }
    if (lane.inFlight < lane.cap && lane.waiters.length === 0) {
      if (lane.inFlight === 0 && lane.latencyMs < this.#stallMs) lane.progressAt = now;
      lane.inFlight++;
      return this.#slot(key, lane);
    }
    const stalled = now - lane.progressAt > this.#stallMs;
    if (!stalled && lane.waiters.length < lane.cap * WAITERS_PER_SLOT) {
      if (await this.#wait(lane)) return this.#slot(key, lane);
    }
    return { deferMs: this.#deferral(lane) };
  }

  #room(lane: Lane, now: number): number {
    return this.#stalled(lane, now) ? 0 : Math.max(0, lane.cap - lane.inFlight);
  }

  /** Attempts in flight, and no quick answer for longer than the stall time. */
  #stalled(lane: Lane, now: number): boolean {
    return lane.inFlight > 0 && now - lane.progressAt > this.#stallMs;
  }

  #lane(key: string, now: number): Lane | undefined {
    const held = this.#lanes.get(key);
    return held && this.#current(key, held, now);
  }

  /**
   * The lane as it stands now. What an idle lane learned fades: its cap halves for each
   * IDLE_HALVING_MS it stays idle (as TCP shrinks an idle connection's window, RFC 2861), and once
   * it is back at the floor a lane that answers quickly is forgotten. Idle, a lane tells nothing
   * of how its endpoint is now; kept for a while, its width survives the short gaps of an endpoint
   * fed in batches (a claim's worth at a time), which would otherwise start it from the floor
   * every time. An endpoint that went down meanwhile holds at most its remembered cap, never more
   * than the ceiling, until its attempts time out. A slow lane is remembered however long it is
   * idle, so that its next burst is deferred at once instead of waiting to be found stalled.
   */
  #current(key: string, lane: Lane, now: number): Lane | undefined {
    if (lane.inFlight > 0) return lane;
    const halvings = Math.floor((now - lane.idleSince) / IDLE_HALVING_MS);
    if (halvings > 0) {
      lane.cap = Math.max(this.#floor, Math.floor(lane.cap / 2 ** halvings));
      lane.idleSince += halvings * IDLE_HALVING_MS;
    }
    // A quick lane back at its floor is kept for a moment too: a steady flow of a few at a time
    // often leaves it empty between two of them, and what it knows (that it answers quickly) lets
    // the next burst wait for its slots (`accepts`).
    if (lane.cap > this.#floor || lane.latencyMs >= this.#stallMs || now - lane.emptiedAt < IDLE_HALVING_MS) {
      return lane;
    }
    this.#lanes.delete(key);
    return undefined;
  }

  #wait(lane: Lane): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        const i = lane.waiters.indexOf(handOver);
        if (i >= 0) lane.waiters.splice(i, 1);
        resolve(false);
      }, this.#stallMs);
      const handOver = (slot: boolean) => {
        clearTimeout(timer);
        resolve(slot);
      };
      lane.waiters.push(handOver);
    });
  }

  /**
   * About one attempt's duration: by then the attempts in flight have likely finished. A
   * stalled endpoint's attempts take their whole timeout, so its backlog comes back that rarely;
   * until one has ended, the stall's age so far stands in for the duration.
   */
  #deferral(lane: Lane): number {
    const duration = Math.max(lane.latencyMs, this.#now() - lane.progressAt);
    const wait = Math.min(this.#maxDeferMs, Math.max(MIN_DEFER_MS, duration));
    // Jitter keeps deferred attempts from coming back as one herd.
    return Math.round(wait * (0.75 + Math.random() * 0.5));
  }

  #slot(key: string, lane: Lane): Slot {
    let released = false;
    return {
      release: (durationMs, answer) => {
        if (released) return;
        released = true;
        const now = this.#now();
        lane.latencyMs = lane.latencyMs * 0.7 + durationMs * 0.3;
        const quick = durationMs < this.#stallMs;
        if (quick) lane.progressAt = now;
        if (!quick || answer === "overloaded") {
          lane.cap = Math.max(this.#floor, Math.floor(lane.cap / 2));
        } else if (answer === "ok" && (lane.inFlight >= lane.cap || lane.waiters.length > 0)) {
          // Only a lane that used its whole cap learns that the endpoint takes more.
          lane.cap = Math.min(this.#ceiling, lane.cap + 1);
        }
        lane.inFlight--;
        // The freed slot, and one more when the cap grew, go to the attempts waiting; after a
        // decrease they wait until the lane is below its new cap (or are deferred).
        while (lane.inFlight < lane.cap) {
          const next = lane.waiters.shift();
          if (!next) break;
          lane.inFlight++;
          next(true);
        }
        if (lane.inFlight > 0) return;
        lane.idleSince = now;
        lane.emptiedAt = now;
        this.#current(key, lane, now);
      },
    };
  }
}

function laneKey(tenantId: string, webhookKey: string): string {
  return `${tenantId}\u0000${webhookKey}`;
}
