import type { RateLimit } from "./api-keys.service.js";

/**
 * `remaining`: whole requests left in the bucket after this one; `resetSeconds`: until it is full
 * again. They are the values of the `RateLimit` response header.
 */
export type RateDecision = { remaining: number; resetSeconds: number } & (
  | { allowed: true }
  | { allowed: false; retryAfterSeconds: number }
);

interface Bucket {
  tokens: number;
  at: number;
}

/**
 * A token bucket per API key: `burst` tokens at most, refilled at `perSecond`. Each process keeps
 * its own buckets, so N API processes admit up to N times the limit in total; the limit protects
 * a process from one noisy key and is not an accounting boundary (see docs/decisions).
 */
export class RateLimiter {
  readonly #buckets = new Map<string, Bucket>();
  #lastSweep = 0;

  constructor(private readonly now: () => number = () => performance.now()) {}

  take(keyId: string, limit: RateLimit): RateDecision {
    const now = this.now();
    this.#sweep(now);
    const bucket = this.#buckets.get(keyId) ?? { tokens: limit.burst, at: now };
    bucket.tokens = Math.min(limit.burst, bucket.tokens + ((now - bucket.at) / 1000) * limit.perSecond);
    bucket.at = now;
    this.#buckets.set(keyId, bucket);
    const allowed = bucket.tokens >= 1;
    if (allowed) bucket.tokens -= 1;
    const state = {
      remaining: Math.floor(bucket.tokens),
      resetSeconds: Math.ceil((limit.burst - bucket.tokens) / limit.perSecond),
    };
    if (allowed) return { allowed: true, ...state };
    return {
      allowed: false,
      ...state,
      retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / limit.perSecond)),
    };
  }

  /** Forgets buckets idle for a minute: a refilled bucket is the same as no bucket. */
  #sweep(now: number): void {
    if (now - this.#lastSweep < 60_000) return;
    this.#lastSweep = now;
    for (const [key, bucket] of this.#buckets) if (now - bucket.at > 60_000) this.#buckets.delete(key);
  }
}
