import type autocannon from "autocannon";
import { startBareServer } from "./bare.js";
import { type CaseSummary, casesOf, decisionsIn, drained, type Work, workPerCase } from "./cases.js";
import { cpuBetween, mapParts, partsText, readCpu } from "./cpu.js";
import { type LoadResult, paced } from "./load.js";
import { setting } from "./settings.js";
import { round } from "./stats.js";
import type { BenchContext, BenchServer, Figure } from "./types.js";

// The measurements the case scenarios share: the bare INSERT server's rate, the service's rate
// while it decides, and decisions at a steady rate below it.

/** One body for every request, or a function making each request's own body. */
export type Body = string | (() => string);

/** autocannon options sending `body` (a new one per request when it is a function). */
function bodyOptions(body: Body): { body?: string; autocannon?: Partial<autocannon.Options> } {
  if (typeof body === "string") return { body };
  return { autocannon: { requests: [{ setupRequest: (req) => ({ ...req, body: body() }) }] } };
}

/**
 * Seconds of saturating load, unmeasured, before a service's or the bare server's measured rounds
 * (BENCH_SATURATE_WARMUP): long enough for the JIT to finish compiling the hot paths. A fresh
 * service compiled for about ten seconds of such load, a quarter of its CPU in the first rounds
 * (docs/benchmarks.md, 2 December 2026), which a service that has run for a minute never pays.
 */
function saturationWarmup(ctx: BenchContext): number {
  return Math.max(setting("BENCH_SATURATE_WARMUP", 10), ctx.settings.warmupSeconds);
}

/** The bare INSERT server on a fresh database of this kind, under `POST /cases` load: the baseline. */
export async function bareBaseline(
  ctx: BenchContext,
  database: "postgres" | "pglite",
  body: Body,
  connections: number,
): Promise<LoadResult> {
  const bare = await startBareServer(database);
  try {
    const [result] = await ctx.load(
      [
        {
          name: `bare INSERT server (${database})`,
          baseUrl: () => bare.url,
          path: "/cases",
          method: "POST",
          headers: { "content-type": "application/json" },
          ...bodyOptions(body),
        },
      ],
      { connections, warmupSeconds: saturationWarmup(ctx) },
    );
    if (!result) throw new Error("the load generator returned no result");
    return result;
  } finally {
    await bare.stop();
  }
}

/** A tenant's submissions: its headers (key and content type) and bodies. */
export interface Submissions {
  tenantId: string;
  headers: Record<string, string>;
  body: Body;
}

/**
 * `POST /cases` as fast as the service answers, then every case submitted meanwhile once all are
 * decided: the submission rate and the decisions made while submissions saturate the service,
 * with the CPU seconds each part of the machine spent from the first submission to the last
 * decision (`cpuBetween`; undefined without /proc). A warm-up of the same load comes first
 * (`saturationWarmup`), its cases decided before the measured rounds begin and counted in
 * neither figure.
 */
export async function saturate(
  ctx: BenchContext,
  server: BenchServer,
  name: string,
  submissions: Submissions,
  connections: number,
): Promise<{ submitted: LoadResult; cases: CaseSummary[]; cpu: Record<string, number> | undefined }> {
  const target = {
    baseUrl: () => server.url,
    path: "/cases",
    method: "POST" as const,
    headers: submissions.headers,
    ...bodyOptions(submissions.body),
  };
  const warmup = saturationWarmup(ctx);
  ctx.log(`warming up ${name} (${warmup} s), then deciding what it submitted`);
  await ctx.load([{ ...target, name: `warm-up: ${name}` }], {
    connections,
    warmupSeconds: 0,
    repeats: 1,
    durationSeconds: warmup,
  });
  await drained(server, submissions.tenantId);
  const pids = { service: server.pids().service };
  const cpuBefore = readCpu(pids);
  const from = new Date();
  const [submitted] = await ctx.load([{ ...target, name }], { connections, warmupSeconds: 0 });
  if (!submitted) throw new Error("the load generator returned no result");
  const to = new Date();
  await drained(server, submissions.tenantId);
  const cpuAfter = readCpu(pids);
  const cpu = cpuBefore && cpuAfter ? cpuBetween(cpuBefore, cpuAfter) : undefined;
  return { submitted, cases: await casesOf(server, submissions.tenantId, from, to), cpu };
}

/** The note of `saturate`'s CPU per decided case, none without a reading or a decision. */
export function cpuNotes(label: string, cpu: Record<string, number> | undefined, decided: number): string[] {
  if (!cpu || decided === 0) return [];
  const perCase = mapParts(cpu, (seconds) => (seconds * 1000) / decided);
  return [`${label}: CPU ms per case accepted and decided while saturated: ${partsText(perCase)}`];
}

/**
 * Half the service's maximum rate: the maximum is the lower of what it accepted and what it
 * decided while submissions saturated it (a rate it accepts but cannot decide only builds a
 * queue, and the latencies behind it would be the queue's).
 */
export function halfTheMaximum(submitted: LoadResult, decided: { perSecond: number }): number {
  return Math.max(10, Math.round(Math.min(submitted.requestsPerSecond, decided.perSecond) / 2));
}

/**
 * `repeats` rounds of `durationSeconds` each at `rate` submissions per second, evenly spaced
 * (`paced`); each round's cases once all are decided (each round's figures logged under `label`).
 */
export async function steadyRounds(
  ctx: BenchContext,
  server: BenchServer,
  submissions: Submissions,
  rate: number,
  connections: number,
  label: string,
): Promise<CaseSummary[][]> {
  const rounds: CaseSummary[][] = [];
  for (let pass = 1; pass <= ctx.settings.repeats; pass++) {
    const from = new Date();
    await paced({
      url: `${server.url}/cases`,
      method: "POST",
      headers: submissions.headers,
      body: submissions.body,
      connections,
      rate,
      seconds: ctx.settings.durationSeconds,
    });
    const to = new Date();
    await drained(server, submissions.tenantId);
    const cases = await casesOf(server, submissions.tenantId, from, to);
    const run = decisionsIn(cases);
    ctx.log(
      `${label}, round ${pass} at ${rate}/s: ${round(run.perSecond)} decisions/s, ` +
        `p50 ${round(run.p50Ms)} ms, p99 ${round(run.p99Ms)} ms`,
    );
    rounds.push(cases);
  }
  return rounds;
}

/** A table row's figures: a rate and its latencies, and the rate's ratio to the baseline. */
export function rateFigures(
  measured: { perSecond: number; p50Ms: number; p99Ms: number },
  baseline: number,
): Record<string, Figure> {
  return {
    "req/s": round(measured.perSecond),
    "p50 ms": round(measured.p50Ms),
    "p99 ms": round(measured.p99Ms),
    "of bare": baseline > 0 ? round(measured.perSecond / baseline) : null,
  };
}

/**
 * PostgreSQL's work per decided case (`workPerCase`) over `count` cases submitted at `rate`,
 * evenly spaced, and decided.
 */
export function workOfSubmissions(
  server: BenchServer,
  submissions: Submissions,
  count: number,
  rate: number,
): Promise<Work> {
  return workPerCase(server, async () => {
    const from = new Date();
    await paced({
      url: `${server.url}/cases`,
      method: "POST",
      headers: submissions.headers,
      body: submissions.body,
      connections: 32,
      rate,
      seconds: count / rate,
    });
    const to = new Date();
    await drained(server, submissions.tenantId);
    return decisionsIn(await casesOf(server, submissions.tenantId, from, to)).decided;
  });
}
