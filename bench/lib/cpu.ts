import fs from "node:fs";
import { median, round } from "./stats.js";

/** Clock ticks per second of /proc's times (USER_HZ: 100 on every Linux this runs on). */
const TICKS = 100;

/** CPU seconds (user + system) of one process or thread from its /proc stat line; 0 once it is gone. */
function secondsOf(statPath: string): number {
  try {
    const line = fs.readFileSync(statPath, "utf8");
    // The command name is in parentheses and may hold spaces: the fields start after its ')'.
    const fields = line.slice(line.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / TICKS;
  } catch {
    return 0;
  }
}

/** A process's CPU seconds: its main thread (its event loop, for a Node process) and all the others. */
export interface ProcessCpu {
  main: number;
  others: number;
}

function processCpu(pid: number): ProcessCpu {
  const total = secondsOf(`/proc/${pid}/stat`);
  const main = secondsOf(`/proc/${pid}/task/${pid}/stat`);
  return { main, others: Math.max(0, total - main) };
}

/** The CPU seconds of each `postgres` process on the machine (server, backends, background workers), by pid. */
function postgresCpu(): Map<string, number> {
  const byPid = new Map<string, number>();
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/comm`, "utf8").trim() !== "postgres") continue;
    } catch {
      continue;
    }
    byPid.set(entry, secondsOf(`/proc/${entry}/stat`));
  }
  return byPid;
}

export interface CpuReading {
  at: number;
  processes: Record<string, ProcessCpu>;
  postgres: Map<string, number>;
  bench: number;
}

/**
 * Where the machine's CPU went: the named service processes (split into main thread and others),
 * every PostgreSQL process, and the bench process itself. Linux only (/proc); elsewhere undefined.
 * A backend that exits between two readings takes its time with them (`postgresBetween` counts
 * only what it can see), so PostgreSQL's figure is a lower bound when connections come and go.
 */
export function readCpu(pids: Record<string, number | undefined>): CpuReading | undefined {
  if (!fs.existsSync("/proc/self/stat")) return undefined;
  const processes: Record<string, ProcessCpu> = {};
  for (const [name, pid] of Object.entries(pids)) if (pid) processes[name] = processCpu(pid);
  const own = process.cpuUsage();
  return { at: performance.now(), processes, postgres: postgresCpu(), bench: (own.user + own.system) / 1e6 };
}

/** CPU seconds PostgreSQL's processes spent between two readings: those alive at both, and those started since. */
function postgresBetween(before: CpuReading, after: CpuReading): number {
  let sum = 0;
  for (const [pid, seconds] of after.postgres) sum += seconds - (before.postgres.get(pid) ?? 0);
  return sum;
}

/**
 * CPU seconds each part of the machine spent between two readings: `<name> main` and
 * `<name> others` for each named process, `postgres`, `bench`.
 */
export function cpuBetween(before: CpuReading, after: CpuReading): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, b] of Object.entries(before.processes)) {
    const a = after.processes[name];
    if (!a) continue;
    out[`${name} main`] = a.main - b.main;
    out[`${name} others`] = a.others - b.others;
  }
  out.postgres = postgresBetween(before, after);
  out.bench = after.bench - before.bench;
  return out;
}

/** Share of one core each part took between two readings (1 = a whole core). */
export function coresBetween(before: CpuReading, after: CpuReading): Record<string, number> {
  const seconds = (after.at - before.at) / 1000;
  return mapParts(cpuBetween(before, after), (s) => s / seconds);
}

/** Each part's figure passed through `fn`. */
export function mapParts(
  parts: Record<string, number>,
  fn: (value: number) => number,
): Record<string, number> {
  return Object.fromEntries(Object.entries(parts).map(([name, value]) => [name, fn(value)]));
}

/** The median of each part's figure over several readings (the parts of the first). */
export function medianParts(runs: ReadonlyArray<Record<string, number>>): Record<string, number> {
  const names = Object.keys(runs[0] ?? {});
  return Object.fromEntries(names.map((n) => [n, median(runs.map((r) => r[n] ?? 0))]));
}

/** "api main 0.1, api others 0.01, …", or why there is nothing to say. */
export function partsText(parts: Record<string, number> | undefined): string {
  const entries = Object.entries(parts ?? {});
  if (entries.length === 0) return "not read (no /proc)";
  return entries.map(([name, value]) => `${name} ${round(value)}`).join(", ");
}
