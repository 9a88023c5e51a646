/**
 * Bounds the attempts in flight per endpoint (a tenant's webhook configuration) in this
 * process, so that one slow or dead endpoint cannot take the delivery worker's slots from
 * everyone else.
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
  /** Attempts in flight per endpoint. */
  perEndpoint: number;
  /** Without a quick answer for this long, a full endpoint counts as stalled. */
  stallMs?: number;
  /** The longest an attempt is deferred at once. */
  maxDeferMs?: number;
  now?: () => number;
}

export interface Slot {
  /** Frees the slot; `durationMs` is how long the attempt took (it teaches the lane its pace). */
  release(durationMs: number): void;
}

/** A guess at an endpoint's latency before it has answered once. */
const INITIAL_LATENCY_MS = 100;
const MIN_DEFER_MS = 25;
/** Attempts that may wait here for a busy endpoint, per slot of that endpoint. */
const WAITERS_PER_SLOT = 4;

interface Lane {
  inFlight: number;
  waiters: Array<(slot: boolean) => void>;
  /** Moving average of attempt durations. */
  latencyMs: number;
  /** The last quick answer, or when the lane last became busy. */
  progressAt: number;
}

export class DeliveryGate {
  readonly #lanes = new Map<string, Lane>();
  readonly #cap: number;
  readonly #stallMs: number;
  readonly #maxDeferMs: number;
  readonly #now: () => number;

  constructor(options: GateOptions) {
    this.#cap = options.perEndpoint;
    this.#stallMs = options.stallMs ?? 300;
    // An endpoint that comes back is noticed by its attempts in flight; its deferred backlog returns
    // within this, and a dead endpoint's backlog costs one row update per event per this long.
    this.#maxDeferMs = options.maxDeferMs ?? 60_000;
    this.#now = options.now ?? Date.now;
  }

  /** The endpoints with every slot taken (or stalled with attempts in flight): not worth claiming for. */
  full(): Array<{ tenantId: string; webhookKey: string }> {
    const now = this.#now();
    const found: Array<{ tenantId: string; webhookKey: string }> = [];
    for (const [key, lane] of this.#lanes) {
      const stalled = lane.inFlight > 0 && now - lane.progressAt > this.#stallMs;
      if (lane.inFlight < this.#cap && !stalled) continue;
      const [tenantId, webhookKey] = key.split("\u0000") as [string, string];
      found.push({ tenantId, webhookKey });
    }
    return found;
  }

  /** Attempts an endpoint's lane has room for now: none while it is stalled. */
  room(tenantId: string, webhookKey: string): number {
    const lane = this.#lanes.get(laneKey(tenantId, webhookKey));
    if (!lane) return this.#cap;
    const stalled = lane.inFlight > 0 && this.#now() - lane.progressAt > this.#stallMs;
    return stalled ? 0 : Math.max(0, this.#cap - lane.inFlight);
  }

  inFlight(tenantId: string, webhookKey: string): number {
    return this.#lanes.get(laneKey(tenantId, webhookKey))?.inFlight ?? 0;
  }

  /** A slot for one attempt, or the delay after which to try again. */
  async enter(tenantId: string, webhookKey: string): Promise<Slot | { deferMs: number }> {
    const key = laneKey(tenantId, webhookKey);
    const now = this.#now();
    let lane = this.#lanes.get(key);
    if (!lane) {
      lane = { inFlight: 0, waiters: [], latencyMs: INITIAL_LATENCY_MS, progressAt: now };
      this.#lanes.set(key, lane);
    }
    if (lane.inFlight < this.#cap && lane.waiters.length === 0) {
      if (lane.inFlight === 0 && lane.latencyMs < this.#stallMs) lane.progressAt = now;
      lane.inFlight++;
      return this.#slot(key, lane);
    }
    const stalled = now - lane.progressAt > this.#stallMs;
    if (!stalled && lane.waiters.length < this.#cap * WAITERS_PER_SLOT) {
      if (await this.#wait(lane)) return this.#slot(key, lane);
    }
    return { deferMs: this.#deferral(lane) };
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
      release: (durationMs) => {
        if (released) return;
        released = true;
        const now = this.#now();
        lane.latencyMs = lane.latencyMs * 0.7 + durationMs * 0.3;
        if (durationMs < this.#stallMs) lane.progressAt = now;
        const next = lane.waiters.shift();
        if (next) {
          next(true);
          return;
        }
        lane.inFlight--;
        // A lane that answers quickly is forgotten when idle; a slow one is remembered, so
        // that its next burst is deferred at once instead of waiting to be found stalled.
        if (lane.inFlight === 0 && lane.latencyMs < this.#stallMs) this.#lanes.delete(key);
      },
    };
  }
}

function laneKey(tenantId: string, webhookKey: string): string {
  return `${tenantId}\u0000${webhookKey}`;
}
