import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import type { PGlite } from "@electric-sql/pglite";
import {
  CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from "kysely";

/**
 * PGlite is one PostgreSQL backend with one session. Two transactions interleaved on that
 * session would be one transaction: a ROLLBACK of one would discard the other's writes, and a
 * COMMIT of one would commit the other's half-done work. So this driver hands out its single
 * connection to one holder at a time; a transaction holds it from BEGIN to COMMIT/ROLLBACK and
 * every other query waits in line. That is the same isolation a pool of one would give.
 */
class SessionLock {
  #tail: Promise<void> = Promise.resolve();

  acquire(): Promise<() => void> {
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const ready = this.#tail.then(() => release);
    this.#tail = held;
    return ready;
  }
}

class PGliteConnection implements DatabaseConnection {
  constructor(private readonly pglite: PGlite) {}

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    // Like node-postgres, a query without parameters goes over the simple protocol, which
    // also runs a script of several statements (migrations); the last result is returned.
    const result =
      compiled.parameters.length === 0
        ? (await this.pglite.exec(compiled.sql)).at(-1)
        : await this.pglite.query<R>(compiled.sql, [...compiled.parameters]);
    if (!result) return { rows: [] };
    return {
      rows: result.rows as R[],
      numAffectedRows: result.affectedRows === undefined ? undefined : BigInt(result.affectedRows),
    };
  }

  // biome-ignore lint/correctness/useYield: streaming is not offered by this driver
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error("streaming queries are not supported on the embedded database");
  }
}

class PGliteDriver implements Driver {
  readonly #lock = new SessionLock();
  readonly #connection: PGliteConnection;
  #release: (() => void) | undefined;

  constructor(private readonly pglite: PGlite) {
    this.#connection = new PGliteConnection(pglite);
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    // PGlite runs in this thread and resolves through microtasks only: a busy worker could
    // chain queries forever without timers or sockets getting a turn. Yielding to the event
    // loop before each use keeps the HTTP server, timers and lease renewals alive.
    await yieldToEventLoop();
    this.#release = await this.#lock.acquire();
    return this.#connection;
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const mode = settings.isolationLevel ? ` isolation level ${settings.isolationLevel}` : "";
    await connection.executeQuery(CompiledQuery.raw(`begin${mode}`));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw("commit"));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw("rollback"));
  }

  async releaseConnection(): Promise<void> {
    const release = this.#release;
    this.#release = undefined;
    release?.();
  }

  async destroy(): Promise<void> {
    await this.pglite.close();
  }
}

export class PGliteDialect implements Dialect {
  constructor(private readonly pglite: PGlite) {}

  createAdapter() {
    return new PostgresAdapter();
  }
  createDriver(): Driver {
    return new PGliteDriver(this.pglite);
  }
  createQueryCompiler() {
    return new PostgresQueryCompiler();
  }
  createIntrospector(db: Kysely<unknown>) {
    return new PostgresIntrospector(db);
  }
}
