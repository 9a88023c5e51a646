/** How a fuzz run is set: `npm test` runs a fixed seed, `npm run fuzz` (CDS_FUZZ=1) a fresh one. */
export interface FuzzRun {
  seed: number;
  /** About this many generated requests. */
  requests: number;
  /** The run's time limit: it grows with its requests, 50 ms each, for a machine ten times slower than ours. */
  timeoutMs: number;
}

/**
 * The run's settings: in `npm test`, the file's fixed seed and request count; with CDS_FUZZ=1,
 * a fresh seed and 20,000 requests, printed under `name` so that CDS_FUZZ_SEED repeats the run
 * (CDS_FUZZ_SEED and CDS_FUZZ_REQUESTS set either).
 */
export function fuzzRun(name: string, fixed: { seed: number; requests: number }): FuzzRun {
  const long = process.env.CDS_FUZZ === "1";
  const seed = Number(process.env.CDS_FUZZ_SEED || (long ? Math.floor(Math.random() * 2 ** 31) : fixed.seed));
  const requests = Number(process.env.CDS_FUZZ_REQUESTS || (long ? 20_000 : fixed.requests));
  if (long)
    console.log(`${name}: seed ${seed}, about ${requests} requests (CDS_FUZZ_SEED=${seed} repeats this run)`);
  return { seed, requests, timeoutMs: Math.max(60_000, requests * 50) };
}
