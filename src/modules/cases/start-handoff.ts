// New cases handed from a process's API to the same process's starter (decision 0028). The
// starter attaches itself here while it runs; the statement that accepts cases then inserts as
// many as the starter will take already claimed (their first run counted, a lease), and hands
// them over once committed. A process without a running starter inserts its cases for any.

import type { Row } from "../../platform/db/index.js";

/** A case a starter claimed: its id and the runs of it begun, this one included. */
export interface StartClaim {
  id: string;
  start_attempts: number;
  /**
   * The case as its insert (a hand-over) or its fresh claim left it: the starter runs it from
   * this without reading it again, and its write checks the claim.
   */
  row?: Row<"cases">;
}

/** The starter's side: how many new cases it takes, and the cases once inserted. */
export interface StartTaker {
  /** How many of `count` cases about to be inserted it will take (reserving room for them). */
  reserve(count: number): number;
  /** The reserved cases inserted claimed for it; `unused` reservations were not inserted. */
  take(claims: StartClaim[], unused: number): void;
}

/** Where the API finds its process's starter, if one runs, and others see when it last worked. */
export class StartHandoff {
  #taker: StartTaker | undefined;
  #lastStarted = Number.NEGATIVE_INFINITY;

  /** A starter of this process has just started new cases. */
  noteStarted(): void {
    this.#lastStarted = performance.now();
  }

  /** Whether a starter of this process started new cases in the last `ms` milliseconds. */
  startedWithin(ms: number): boolean {
    return performance.now() - this.#lastStarted < ms;
  }

  /** A starter attaches when it starts; with several in one process, the first one attached. */
  attach(taker: StartTaker): void {
    this.#taker ??= taker;
  }

  /** The starter detaches before it stops: cases inserted after that are left to any starter. */
  detach(taker: StartTaker): void {
    if (this.#taker === taker) this.#taker = undefined;
  }

  /** The starter that takes reserved cases, with how many of `count` it takes (0 without one). */
  reserve(count: number): { taker: StartTaker; count: number } | undefined {
    const taker = this.#taker;
    const taken = taker?.reserve(count) ?? 0;
    return taker && taken > 0 ? { taker, count: taken } : undefined;
  }
}
