/**
 * Turns many concurrent single-row statements into one statement over many rows. Calls made
 * while earlier batches are still running wait for a free lane and go together, so a lone call
 * runs at once and a burst costs a few round trips instead of one each: under load, the database
 * work per request shrinks with the number of requests in flight. Each round trip costs tens of
 * microseconds of CPU on both sides, and a commit far more than a row: one statement of 16 rows
 * inserts about six times as many rows per second as 16 statements of one row (docs/benchmarks.md).
 * No item waits for a timer, unless its batcher is given `lingerMs`: then a batch short of
 * `maxBatch` waits that long for company before it runs (decision 0031), for work nobody waits on.
 */
export class Batcher<I, O> {
  #queue: Array<{ item: I; at: number; resolve: (o: O) => void; reject: (e: unknown) => void }> = [];
  #running = 0;
  #lingering: NodeJS.Timeout | undefined;
  #gathering: NodeJS.Immediate | undefined;

  constructor(
    /** Must answer one result per item, in order. */
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly options: {
      maxBatch: number;
      lanes: number;
      lingerMs?: number;
      /** A lone item waits for the rest of the event loop's turn: what the turn adds goes with it. */
      gather?: boolean;
    },
  ) {}

  add(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#queue.push({ item, at: this.options.lingerMs ? performance.now() : 0, resolve, reject });
      if (!this.options.gather) {
        this.#next();
        return;
      }
      this.#gathering ??= setImmediate(() => {
        this.#gathering = undefined;
        this.#next();
      });
    });
  }

  #next(): void {
    if (this.#running >= this.options.lanes || this.#queue.length === 0) return;
    // The oldest item waits for company until `lingerMs` after it came, not after a lane freed.
    const wait = (this.options.lingerMs ?? 0) - (performance.now() - (this.#queue[0]?.at ?? 0));
    if (wait > 0 && this.#queue.length < this.options.maxBatch) {
      this.#lingering ??= setTimeout(() => {
        this.#lingering = undefined;
        this.#flush();
      }, wait);
      return;
    }
    this.#flush();
  }

  #flush(): void {
    if (this.#running >= this.options.lanes || this.#queue.length === 0) return;
    clearTimeout(this.#lingering);
    this.#lingering = undefined;
    const batch = this.#queue.splice(0, this.options.maxBatch);
    this.#running++;
    this.run(batch.map((b) => b.item))
      .then(
        (results) => {
          batch.forEach((b, i) => {
            b.resolve(results[i] as O);
          });
        },
        (err: unknown) => {
          for (const b of batch) b.reject(err);
        },
      )
      .finally(() => {
        this.#running--;
        this.#next();
      });
  }
}

/**
 * One Batcher per key (an executor: a transaction's reads go together, never with another's),
 * made when the key is first asked for and gone with it. The cases of one starter batch run side
 * by side in one transaction, so their reads of one kind (list lookups, history figures) share a
 * statement instead of taking one round trip each. They reach a node in the same turn of the
 * event loop, so the first read waits for the others (`gather`) instead of going alone.
 */
export function batcherPer<K extends object, I, O>(
  run: (key: K, items: I[]) => Promise<O[]>,
  options: { maxBatch: number; lanes: number },
): (key: K) => Batcher<I, O> {
  const batchers = new WeakMap<K, Batcher<I, O>>();
  return (key) => {
    let batcher = batchers.get(key);
    if (!batcher) {
      batcher = new Batcher((items) => run(key, items), { ...options, gather: true });
      batchers.set(key, batcher);
    }
    return batcher;
  };
}
