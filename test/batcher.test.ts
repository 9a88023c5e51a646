import { describe, expect, it } from "vitest";
import { Batcher } from "../src/platform/batcher.js";

/** A batcher whose runs are recorded, each answering its items doubled. */
function recorded(options: { maxBatch: number; lanes: number; lingerMs?: number; gather?: boolean }) {
  const runs: number[][] = [];
  const batcher = new Batcher<number, number>(async (items) => {
    runs.push(items);
    return items.map((i) => i * 2);
  }, options);
  return { runs, batcher };
}

describe("Batcher", () => {
  it("runs a lone item at once, and items that come while a lane is busy together after it", async () => {
    const { runs, batcher } = recorded({ maxBatch: 16, lanes: 1 });
    const first = batcher.add(1);
    const rest = [batcher.add(2), batcher.add(3)];
    expect(await Promise.all([first, ...rest])).toEqual([2, 4, 6]);
    expect(runs).toEqual([[1], [2, 3]]);
  });

  it("with gather, runs what one turn of the event loop adds together, and a later turn's apart", async () => {
    const { runs, batcher } = recorded({ maxBatch: 16, lanes: 1, gather: true });
    // Items added in one turn, some after awaiting what is already settled (as cases running side
    // by side reach a node after their own microtasks).
    const answers = [batcher.add(1), Promise.resolve().then(() => batcher.add(2)), batcher.add(3)];
    expect(await Promise.all(answers)).toEqual([2, 4, 6]);
    expect(runs).toEqual([[1, 3, 2]]);
    expect(await batcher.add(4)).toBe(8);
    expect(runs).toEqual([[1, 3, 2], [4]]);
  });

  it("with lingerMs, keeps items that come in different turns of the event loop for one run, run once full", async () => {
    // An hour's linger: the test would time out if the full batch waited for the timer.
    const { runs, batcher } = recorded({ maxBatch: 4, lanes: 1, lingerMs: 3_600_000 });
    const answers: Array<Promise<number>> = [batcher.add(1)];
    for (const item of [2, 3, 4]) {
      // A later turn of the event loop: without lingering, item 1 would have run alone by now.
      await new Promise<void>((resolve) => setImmediate(resolve));
      answers.push(batcher.add(item));
    }
    expect(await Promise.all(answers)).toEqual([2, 4, 6, 8]);
    expect(runs).toEqual([[1, 2, 3, 4]]);
  });

  it("with lingerMs, runs a batch short of full once its oldest item has waited that long", async () => {
    const { runs, batcher } = recorded({ maxBatch: 16, lanes: 1, lingerMs: 5 });
    expect(await Promise.all([batcher.add(1), batcher.add(2)])).toEqual([2, 4]);
    expect(runs).toEqual([[1, 2]]);
  });

  it("rejects every item of a batch whose run fails, and runs the next batch", async () => {
    let fail = true;
    const batcher = new Batcher<number, number>(
      async (items) => {
        if (fail) {
          fail = false;
          throw new Error("refused");
        }
        return items;
      },
      { maxBatch: 16, lanes: 1, lingerMs: 5 },
    );
    const failed = [batcher.add(1), batcher.add(2)];
    await expect(Promise.all(failed)).rejects.toThrow("refused");
    expect(await batcher.add(3)).toBe(3);
  });
});
