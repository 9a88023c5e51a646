import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { CompiledQuery, Kysely, PostgresDialect, type RawBuilder, sql, type Transaction } from "kysely";
import pg from "pg";
import { lockDataDir } from "./dir-lock.js";
import { GuardedDialect, inTransactionScope, openingStatement } from "./guard.js";
import { PgListener } from "./pg-listener.js";
import { PGliteDialect } from "./pglite-driver.js";
import { PreparingClient } from "./prepared-client.js";
import type { Database } from "./schema.js";
import { sharedParsers } from "./types.js";

export type { Database } from "./schema.js";

/** A query executor: the root database or an open transaction. Repositories take this. */
export type Executor = Kysely<Database>;
export type Tx = Transaction<Database>;
/**
 * What a caller adds to a service's transaction, after the change and with its result (the
 * console's audit row): the two commit together or not at all.
 */
export type InSameTransaction<R> = (tx: Tx, result: R) => Promise<void>;

export type DriverKind = "pglite" | "postgres";

export interface Db {
  readonly kind: DriverKind;
  /** The root executor. Never use it inside `transaction()`: use the handle it passes. */
  readonly root: Kysely<Database>;
  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /** Subscribes to NOTIFY on a channel; resolves once listening. Returns the unsubscribe. */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>;
  /**
   * PostgreSQL: an executor on connections of their own whose every statement PostgreSQL cancels
   * after `timeoutMs` (error 57014), for reads that may run long and must not hold up the
   * transaction that asks for them; it sees only what was committed. The embedded database has
   * one connection and no such bound: null.
   */
  boundedReads(timeoutMs: number): Executor | null;
  close(): Promise<void>;
}

export interface DbOptions {
  /** `postgres://…`; when absent the embedded database is used. */
  databaseUrl?: string | undefined;
  /** Directory of the embedded database; absent for an in-memory one (tests). */
  dataDir?: string | undefined;
  poolSize?: number;
  applicationName?: string;
  /**
   * Each statement with parameters runs as a prepared statement of its connection (of the
   * embedded database's session), parsed once and planned as PostgreSQL's plan cache decides
   * (decision 0030). On by default; off behind a pooler that cannot keep a connection's prepared
   * statements.
   */
  preparedStatements?: boolean;
  /**
   * Refuse a query on the root executor from inside a transaction (NestedQueryError). On by
   * default, and in every test; the service turns it off: it costs an AsyncLocalStorage context
   * on every promise (about 5% of the engine's throughput on Node 20).
   */
  checkNestedQueries?: boolean;
}

const pgTypes = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    const parser = sharedParsers[oid];
    // biome-ignore lint/suspicious/noExplicitAny: pg's overloads do not accept a union format
    return parser ?? pg.types.getTypeParser(oid, format as any);
  },
};

/** An open transaction of `Db.transaction`: its database, and what runs once it has ended. */
export interface OpenTransaction {
  readonly db: Db;
  /**
   * Runs `fn` once the transaction has ended: `committed` is true when its commit succeeded,
   * false when it rolled back or its commit failed (which may still have committed: a caller that
   * leaves something in memory until the commit must make its rows safe on their own as well).
   */
  onEnd(fn: (committed: boolean) => void): void;
}

const openTransactions = new WeakMap<Tx, { db: Db; ends: Array<(committed: boolean) => void> }>();

/** The `Db.transaction` that `tx` is, or undefined (the root executor, a migration's transaction). */
export function transactionOf(tx: Executor): OpenTransaction | undefined {
  const open = openTransactions.get(tx as Tx);
  if (!open) return undefined;
  return { db: open.db, onEnd: (fn) => open.ends.push(fn) };
}

function makeDb(
  kind: DriverKind,
  root: Kysely<Database>,
  listen: Db["listen"],
  boundedReads: Db["boundedReads"],
  close: () => Promise<void>,
  checkNestedQueries: boolean,
): Db {
  const run = async <T>(fn: (tx: Tx) => Promise<T>): Promise<T> => {
    const ends: Array<(committed: boolean) => void> = [];
    let result: T;
    try {
      result = await root.transaction().execute((tx) => {
        openTransactions.set(tx, { db, ends });
        return fn(tx);
      });
    } catch (err) {
      for (const f of ends) f(false);
      throw err;
    }
    for (const f of ends) f(true);
    return result;
  };
  const db: Db = {
    kind,
    root,
    transaction: checkNestedQueries ? (fn) => inTransactionScope(() => run(fn)) : run,
    listen,
    boundedReads,
    close,
  };
  return db;
}

/**
 * The settings of a bounded read, beside `statement_timeout`: on a bounded connection's session
 * and in a savepoint of `withinBudget`. A bounded read runs beside live work: parallel workers
 * would take the cores from it. (A hot key's 30-day distinct count took 31 ms either way, and
 * about 50 ms of CPU in three processes with them; decision 0021.) Its statements are prepared
 * and planned once: the figures' statement takes its keys from arrays, so no plan could use a
 * key's own history, and planning it for each batch was most of PostgreSQL's work on the history
 * benchmark.
 */
const BOUNDED_SETTINGS = {
  max_parallel_workers_per_gather: "0",
  plan_cache_mode: "force_generic_plan",
} as const;

export async function openDb(options: DbOptions): Promise<Db> {
  if (options.databaseUrl) {
    const databaseUrl = options.databaseUrl;
    const name = options.applicationName ?? "cds";
    const newPool = (max: number, extra: Partial<pg.PoolConfig>) => {
      const made = new pg.Pool({
        connectionString: databaseUrl,
        max,
        application_name: name,
        types: pgTypes,
        // Without it a query waits forever for a server that does not answer (readiness included).
        connectionTimeoutMillis: 10_000,
        ...extra,
      });
      // An idle client that errors (server restart) must not crash the process; the pool drops it.
      made.on("error", () => {});
      return made;
    };
    const pool = newPool(
      options.poolSize ?? 10,
      options.preparedStatements === false ? {} : { Client: PreparingClient },
    );
    const listener = new PgListener(databaseUrl, pgTypes);
    const root = new Kysely<Database>({ dialect: new GuardedDialect(new PostgresDialect({ pool })) });
    // One small pool per bound, made when first asked for. Not guarded: its queries run beside
    // a transaction on purpose, on connections no transaction holds.
    const bounded = new Map<number, Kysely<Database>>();
    const boundedReads = (timeoutMs: number): Executor => {
      let reader = bounded.get(timeoutMs);
      if (!reader) {
        const boundedPool = newPool(Math.max(2, Math.ceil((options.poolSize ?? 10) / 2)), {
          application_name: `${name}-bounded`,
          statement_timeout: timeoutMs,
          options: Object.entries(BOUNDED_SETTINGS)
            .map(([setting, value]) => `-c ${setting}=${value}`)
            .join(" "),
          ...(options.preparedStatements === false ? {} : { Client: PreparingClient }),
        });
        reader = new Kysely<Database>({ dialect: new PostgresDialect({ pool: boundedPool }) });
        bounded.set(timeoutMs, reader);
      }
      return reader;
    };
    return makeDb(
      "postgres",
      root,
      (channel, cb) => listener.listen(channel, cb),
      boundedReads,
      async () => {
        await listener.close();
        await Promise.all([...bounded.values()].map((reader) => reader.destroy()));
        await root.destroy();
      },
      options.checkNestedQueries ?? true,
    );
  }

  const unlock = options.dataDir ? lockDataDir(options.dataDir) : () => {};
  let pglite: PGlite;
  try {
    pglite = await PGlite.create(options.dataDir ? path.join(options.dataDir, "pgdata") : undefined, {
      parsers: sharedParsers,
    });
  } catch (err) {
    unlock();
    throw err;
  }
  const root = new Kysely<Database>({
    dialect: new GuardedDialect(
      new PGliteDialect(pglite, { preparedStatements: options.preparedStatements }),
    ),
  });
  return makeDb(
    "pglite",
    root,
    async (channel, cb) => {
      const stop = await pglite.listen(channel, cb);
      return () => stop();
    },
    () => null,
    async () => {
      try {
        await root.destroy();
      } finally {
        unlock();
      }
    },
    options.checkNestedQueries ?? true,
  );
}

/** A JSON value as a parameter, serialized here so that both drivers send the same text. */
export function json(value: unknown): RawBuilder<string> {
  return sql<string>`${JSON.stringify(value)}::jsonb`;
}

/**
 * A value for a JSON column that may be empty, serialized here like `json`: null and undefined
 * are stored as SQL NULL, not as the JSON `null`.
 */
export function jsonOrNull(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}

/**
 * Runs reads in a transaction of PostgreSQL under a budget, as the bounded connections run them
 * (`boundedReads`): in a savepoint, with `statement_timeout` (each statement's bound), no parallel
 * workers and generic plans, set for the savepoint alone. PostgreSQL cancels a statement past the
 * budget (SQLSTATE 57014); the savepoint is then rolled back and the error thrown, and the
 * transaction goes on. The savepoint is rolled back when the reads succeed too: that is what undoes
 * its settings, so `run` must only read. Its statements run on `tx`, one at a time.
 */
export async function withinBudget<T>(tx: Tx, timeoutMs: number, run: () => Promise<T>): Promise<T> {
  const ms = Math.max(1, Math.floor(timeoutMs));
  // Without parameters, each goes in the simple protocol: one round trip for its commands.
  const settings = Object.entries({ statement_timeout: String(ms), ...BOUNDED_SETTINGS }).map(
    ([setting, value]) => `SET LOCAL ${setting} = ${value}`,
  );
  // Most often the transaction's first statement: its BEGIN then goes with it (decision 0037).
  await tx.executeQuery(
    openingStatement(CompiledQuery.raw(["SAVEPOINT within_budget", ...settings].join("; "))),
  );
  try {
    return await run();
  } finally {
    await sql.raw("ROLLBACK TO SAVEPOINT within_budget; RELEASE SAVEPOINT within_budget").execute(tx);
  }
}

/** True when err is PostgreSQL's unique_violation (on either driver). */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint?: string } | null;
  return e?.code === "23505" && (constraint === undefined || e.constraint === constraint);
}

export { lastStatement, openingStatement } from "./guard.js";
export { keysetPage } from "./keyset.js";
export {
  deleteRows,
  type Filter,
  findRow,
  findRows,
  type Match,
  type OrderBy,
  type Row,
  type Table,
  updateRows,
  upsertRow,
} from "./rows.js";
