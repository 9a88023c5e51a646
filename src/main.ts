import { readFileSync, realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Command, CommanderError, Help, type Option } from "commander";
import { buildApp, buildOperationsApp } from "./app.js";
import { type Config, ConfigError, loadConfig } from "./config.js";
import { createAppContext, nodeTypesOf, serviceMigrations } from "./context.js";
import { featureModules } from "./modules/index.js";
import { ensureStoredAdminToken, readStoredAdminToken } from "./platform/admin-token.js";
import { ApiError, OperatorClient } from "./platform/cli/client.js";
import type { CliContext } from "./platform/cli/context.js";
import { type Db, openDb } from "./platform/db/index.js";
import { createLogger } from "./platform/logger.js";
import { migrate } from "./platform/migrate.js";
import { ensureStoredSecretKey } from "./platform/secret-box.js";
import { startWorker } from "./worker.js";

export interface CliIo {
  env: Record<string, string | undefined>;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  fetch?: typeof fetch;
}

const processIo: CliIo = {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
};

/**
 * After the migrations: the key that seals stored secrets (made once in the data directory in
 * embedded mode), and the sealing of webhook secrets stored before they were sealed.
 */
async function prepareSecrets(config: Config, db: Db, note: (message: string, fields: object) => void) {
  if (!config.secretKey) {
    const stored = ensureStoredSecretKey(config.dataDir);
    if (stored.created)
      note("secret key generated; keep it with the database's backups", { file: stored.file });
  }
  for (const module of featureModules) await module.startup?.({ config, db, note });
}

async function openFor(config: Config) {
  return openDb({
    databaseUrl: config.databaseUrl,
    dataDir: config.databaseUrl ? undefined : config.dataDir,
    poolSize: config.dbPoolSize,
    preparedStatements: config.dbPreparedStatements,
    checkNestedQueries: false,
  });
}

/** Runs the service in this process until SIGINT or SIGTERM: the API, the workers, or both. */
async function serve(io: CliIo, roleOverride?: Config["role"]): Promise<void> {
  let config = loadConfig(roleOverride ? { ...io.env, CDS_ROLE: roleOverride } : io.env);
  const log = createLogger(config.logLevel);
  if (!config.adminToken) {
    const stored = ensureStoredAdminToken(config.dataDir);
    if (stored.created) {
      io.stdout(
        `\nOperator API token (shown once; kept in ${stored.file}):\n\n  ${stored.token}\n\n` +
          "Use it as `Authorization: Bearer <token>`; the `cds` CLI reads it from that file.\n\n",
      );
    }
    config = Object.freeze({ ...config, adminToken: stored.token });
  }
  const db = await openFor(config);
  let app: Awaited<ReturnType<typeof buildApp>> | undefined;
  let worker: Awaited<ReturnType<typeof startWorker>> | undefined;
  let workerDb: Db | undefined;
  try {
    const report = await migrate(db, serviceMigrations());
    if (report.applied.length > 0) log.info({ applied: report.applied }, "migrations applied");
    await prepareSecrets(config, db, (message, fields) => log.info(fields, message));
    const ctx = createAppContext({ config, db, log });
    // A bucket that is missing or refuses the credentials is a bad configuration: stop here.
    const blobProblem = await ctx.blobs.check();
    if (blobProblem) throw new ConfigError(blobProblem.variable, blobProblem.message);
    // The worker starts first: a process that listens with its worker running is ready at once.
    if (config.role !== "api") {
      // On PostgreSQL the workers get a pool of their own, so that a burst of background work
      // never leaves API requests waiting for a connection.
      workerDb = config.role === "all" && db.kind === "postgres" ? await openFor(config) : undefined;
      worker = await startWorker(workerDb ? { ...ctx, db: workerDb } : ctx);
    }
    app = config.role === "worker" ? undefined : await buildApp(ctx);
    if (app) await app.listen({ port: config.port, host: config.host });
    if (!app && config.metricsPort !== undefined) {
      app = await buildOperationsApp(ctx);
      await app.listen({ port: config.metricsPort, host: config.host });
    }
  } catch (err) {
    // A failed start (port in use, a bad migration) releases the database and its lock at once.
    await worker?.stop();
    await app?.close();
    await workerDb?.close();
    await db.close();
    throw err;
  }
  log.info(
    { role: config.role, database: db.kind, env: config.env, url: app ? config.publicUrl : undefined },
    "case decisioning service started",
  );

  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
  log.info("shutting down");
  await app?.close();
  await worker?.stop();
  await workerDb?.close();
  await db.close();
}

async function runMigrations(io: CliIo): Promise<void> {
  const config = loadConfig(io.env);
  const db = await openFor(config);
  try {
    const report = await migrate(db, serviceMigrations());
    for (const m of report.applied) io.stdout(`applied ${String(m.version).padStart(4, "0")}_${m.name}\n`);
    io.stdout(
      report.applied.length === 0
        ? `nothing to apply (${report.alreadyApplied} migrations already applied)\n`
        : `${report.applied.length} applied, ${report.alreadyApplied} were already applied\n`,
    );
    await prepareSecrets(config, db, (message, fields) =>
      io.stdout(`${message} ${JSON.stringify(fields)}\n`),
    );
  } finally {
    await db.close();
  }
}

/** The OpenAPI document of this build, printed without a database or a server. */
async function printOpenApi(io: CliIo): Promise<void> {
  const config = loadConfig({ ...io.env, DATABASE_URL: undefined, CDS_ADMIN_TOKEN: undefined });
  const db = await openDb({});
  const ctx = createAppContext({ config, db, log: createLogger("silent") });
  const app = await buildApp(ctx);
  try {
    await app.ready();
    io.stdout(`${JSON.stringify(app.swagger(), null, 2)}\n`);
  } finally {
    await app.close();
    await db.close();
  }
}

const VERSION = (
  JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }
).version;

/** Help that marks the options a command cannot run without (inherited by every subcommand). */
const markRequired = {
  optionDescription(this: Help, option: Option): string {
    const text = Help.prototype.optionDescription.call(this, option);
    return option.mandatory ? `${text} (required)` : text;
  },
};

export function buildProgram(io: CliIo): Command {
  const program = new Command("cds")
    .description("Case decisioning service: run it, migrate it, and provision it through the operator API")
    // `--version` alone is read by runCli: subcommands have a --version <n> option of their own.
    .version(VERSION, "-V", "print the version (also: cds --version)")
    .configureHelp(markRequired)
    .option(
      "--url <url>",
      "the service's base URL (default: CDS_URL, else CDS_PUBLIC_URL or http://HOST:PORT)",
    )
    .option("--token <token>", "operator token (default: CDS_ADMIN_TOKEN, else the one kept in CDS_DATA_DIR)")
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr });

  program
    .command("serve")
    .description("migrate, then serve the API and run the workers (CDS_ROLE picks api, worker or all)")
    .action(() => serve(io));
  program
    .command("worker")
    .description("migrate, then run workers only (CDS_ROLE=worker)")
    .action(() => serve(io, "worker"));
  program
    .command("migrate")
    .description("apply pending database migrations")
    .action(() => runMigrations(io));
  program
    .command("openapi")
    .description("print the OpenAPI document of this build (servers from CDS_PUBLIC_URL)")
    .action(() => printOpenApi(io));

  const cli: CliContext = {
    nodeTypes: nodeTypesOf(featureModules),
    client() {
      const opts = program.opts<{ url?: string; token?: string }>();
      const config = loadConfig({ ...io.env, DATABASE_URL: undefined, CDS_ADMIN_TOKEN: undefined });
      const url = (opts.url ?? io.env.CDS_URL ?? config.publicUrl).replace(/\/+$/, "");
      const token = opts.token ?? io.env.CDS_ADMIN_TOKEN ?? readStoredAdminToken(config.dataDir);
      return new OperatorClient(url, token, io.fetch);
    },
    print: (value) => io.stdout(`${JSON.stringify(value, null, 2)}\n`),
    write: (lines) => io.stdout(lines.map((line) => `${line}\n`).join("")),
    note: (message) => io.stderr(`${message}\n`),
  };
  for (const module of featureModules) module.cli?.(program, cli);
  return program;
}

/** API fields sent by a flag of another name (`--decision` sends `value`), by command option. */
const FIELD_FLAGS: ReadonlyArray<readonly [field: string, flag: string]> = [
  ["value", "--decision"],
  ["url", "--endpoint"],
  ["activeSecretId", "--active-secret"],
  ["templateId", "--template"],
  ["fields", "--field"],
  ["documents", "--document"],
  ["credentials", "--credential"],
];

/** The flag of the command that sent a field, so that an API error reads in the caller's terms. */
function flagOf(command: Command | undefined, path: string): string | undefined {
  const field = path.split(/[.[]/)[0] ?? "";
  const has = (long: string) => command?.options.some((o) => o.long === long) === true;
  const flag =
    command?.options.find((o) => o.attributeName() === field)?.long ??
    FIELD_FLAGS.find(([f, long]) => f === field && has(long))?.[1];
  return flag && `${flag}${path.slice(field.length)}`;
}

/** Runs one CLI invocation; resolves to the exit code. */
export async function runCli(argv: string[], io: CliIo = processIo): Promise<number> {
  if (argv.length === 1 && argv[0] === "--version") {
    io.stdout(`${VERSION}\n`);
    return 0;
  }
  const program = buildProgram(io);
  let ran: Command | undefined;
  program.hook("preAction", (_program, command) => {
    ran = command;
  });
  try {
    await program.parseAsync(argv, { from: "user" });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode;
    if (err instanceof ConfigError) {
      io.stderr(`configuration error: ${err.message}\n`);
      return 78;
    }
    if (err instanceof ApiError) {
      io.stderr(`error: ${err.message}\n`);
      const details = (err.body as { details?: { path: string; message: string }[] } | undefined)?.details;
      for (const d of details ?? []) io.stderr(`  ${flagOf(ran, d.path) ?? d.path}: ${d.message}\n`);
      return 1;
    }
    io.stderr(`error: ${(err as Error).message}\n`);
    return 1;
  }
}

const invokedDirectly = process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
if (invokedDirectly) {
  process.exitCode = await runCli(process.argv.slice(2));
}
