import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { DATABASE_SERVER, serverVersion } from "./database.js";
import { loadTargets } from "./load.js";
import { describeMachine } from "./machine.js";
import { formatTable } from "./report.js";
import { startServer } from "./server.js";
import { setting } from "./settings.js";
import type { BenchContext, BenchServer, BenchSettings, Scenario, ScenarioResult } from "./types.js";

const RESULTS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../results");

/** The settings of this run, from BENCH_DURATION, BENCH_REPEATS, BENCH_WARMUP and BENCH_CONNECTIONS. */
export function settingsFromEnv(): BenchSettings {
  return {
    durationSeconds: setting("BENCH_DURATION", 5),
    repeats: Math.max(1, Math.round(setting("BENCH_REPEATS", 5))),
    warmupSeconds: setting("BENCH_WARMUP", 3),
    connections: Math.max(1, Math.round(setting("BENCH_CONNECTIONS", 32))),
  };
}

function log(message: string): void {
  process.stderr.write(`  ${message}\n`);
}

// Servers still running, so that an interrupted bench (Ctrl-C) stops them and drops their databases.
const live = new Set<BenchServer>();
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping ${live.size} service(s) and dropping their databases`);
    void Promise.allSettled([...live].map((s) => s.stop())).then(() => process.exit(130));
  });
}

/**
 * Runs the scenarios one after the other: prints the machine and the database, each scenario's
 * table (or its failure), and writes everything to bench/results/<date>.json. Resolves to false
 * when a scenario failed.
 */
export async function runScenarios(scenarios: Scenario[]): Promise<boolean> {
  const settings = settingsFromEnv();
  const postgres = await serverVersion();
  const machine = describeMachine(postgres);
  const usePostgres = postgres !== undefined;

  console.log(
    `Machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB; ${machine.os}; Node ${machine.node}`,
  );
  console.log(
    usePostgres
      ? `Database: PostgreSQL ${postgres} at ${DATABASE_SERVER} (a fresh database per service start, dropped after)`
      : `Database: EMBEDDED (PGlite) — no PostgreSQL server answered at ${DATABASE_SERVER}; ` +
          "figures are not comparable with PostgreSQL ones",
  );
  console.log(
    `Settings: ${settings.repeats} × ${settings.durationSeconds} s per target after ${settings.warmupSeconds} s ` +
      `of warm-up, ${settings.connections} connections; figures are medians\n`,
  );

  const results: Array<{ scenario: string; description: string; result?: ScenarioResult; error?: string }> =
    [];
  let ok = true;
  for (const scenario of scenarios) {
    console.log(`== ${scenario.name}: ${scenario.description}`);
    const servers: BenchServer[] = [];
    const ctx: BenchContext = {
      settings,
      async startServer(options = {}) {
        const onPostgres = options.database === undefined ? usePostgres : options.database === "postgres";
        if (onPostgres && !usePostgres) throw new Error(`no PostgreSQL server answers at ${DATABASE_SERVER}`);
        const server = await startServer({ ...options, usePostgres: onPostgres }, log);
        servers.push(server);
        live.add(server);
        return server;
      },
      load: (targets, options = {}) => loadTargets(targets, { ...settings, ...options }, log),
      log,
    };
    try {
      const result = await scenario.run(ctx);
      console.log(`${formatTable(result)}\n`);
      results.push({ scenario: scenario.name, description: scenario.description, result });
    } catch (err) {
      ok = false;
      const message = err instanceof Error ? (err.stack ?? err.message) : String(err);
      console.log(`FAILED: ${message}\n`);
      results.push({ scenario: scenario.name, description: scenario.description, error: message });
    } finally {
      for (const server of servers) {
        await server.stop().catch((err) => log(`stopping a server failed: ${err}`));
        live.delete(server);
      }
    }
  }

  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  const file = path.join(RESULTS_DIR, `${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
  const record = {
    date: new Date().toISOString(),
    machine,
    database: usePostgres ? "postgres" : "pglite",
    settings,
    results,
  };
  fs.writeFileSync(file, `${JSON.stringify(record, null, 2)}\n`);
  console.log(`Results written to ${path.relative(process.cwd(), file)}`);
  return ok;
}

/**
 * For a scenario file run directly (`node --import tsx bench/scenarios/NN-x.ts`): runs it when
 * `moduleUrl` (its `import.meta.url`) is the script Node was started with, and does nothing when
 * the file is imported by bench/run.ts.
 */
export async function runIfMain(moduleUrl: string, scenario: Scenario): Promise<void> {
  const script = process.argv[1];
  if (!script || path.resolve(script) !== fileURLToPath(moduleUrl)) return;
  process.exitCode = (await runScenarios([scenario])) ? 0 : 1;
}
