import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import { type PGlite, parse, protocol, type Results } from "@electric-sql/pglite";
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
import { beginCommand } from "./guard.js";
import { isStalePlan, PREPARED_PER_CONNECTION } from "./prepared-client.js";

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

interface Statement {
  name: string;
  types: readonly number[];
}

const concat = (...parts: Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
};

class PGliteConnection implements DatabaseConnection {
  /** Each statement text with parameters, prepared once in the session: its name and parameter types. */
  readonly #prepared = new Map<string, Promise<Statement>>();
  #stale: boolean;
  #named = 0;

  /** `prepare` false: every statement runs unnamed, as `query` runs it (CDS_DB_PREPARED_STATEMENTS). */
  constructor(
    private readonly pglite: PGlite,
    prepare: boolean,
  ) {
    this.#stale = !prepare;
  }

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    // Like node-postgres, a query without parameters goes over the simple protocol, which
    // also runs a script of several statements (migrations); the last result is returned.
    const result =
      compiled.parameters.length === 0
        ? (await this.pglite.exec(compiled.sql)).at(-1)
        : await this.#query<R>(compiled.sql, compiled.parameters);
    if (!result) return { rows: [] };
    return {
      rows: result.rows as R[],
      numAffectedRows: result.affectedRows === undefined ? undefined : BigInt(result.affectedRows),
    };
  }

  /**
   * A statement with parameters, as a named prepared statement of the session (decision 0030,
   * on the embedded database): parsed and analysed once instead of at every execution, and each
   * execution one call into the database (bind, describe, execute, sync) instead of five.
   */
  async #query<R>(text: string, parameters: readonly unknown[]): Promise<Results<R> | undefined> {
    if (this.#stale) return this.pglite.query<R>(text, [...parameters]);
    try {
      const statement = await this.#statement(text);
      if (!statement) return await this.pglite.query<R>(text, [...parameters]);
      const values = parameters.map((value, i) => {
        if (value === null || value === undefined) return null;
        const serializer = this.pglite.serializers[statement.types[i] as number];
        return serializer ? serializer(value) : String(value);
      });
      const { serialize } = protocol;
      const messages = await this.pglite._runExclusiveQuery(() =>
        this.pglite.execProtocolStream(
          concat(
            serialize.bind({ statement: statement.name, values }),
            serialize.describe({ type: "P" }),
            serialize.execute({}),
            serialize.sync(),
          ),
        ),
      );
      return parse.parseResults(messages, this.pglite.parsers)[0] as Results<R> | undefined;
    } catch (err) {
      if (!isStalePlan(err)) throw err;
      this.#stale = true;
      this.#prepared.clear();
      return this.pglite.query<R>(text, [...parameters]);
    }
  }

  /**
   * The text's prepared statement, prepared now if it is new (once, however many ask at once);
   * undefined past the session's bound. A text that fails to prepare is forgotten.
   */
  #statement(text: string): Promise<Statement> | undefined {
    const known = this.#prepared.get(text);
    if (known || this.#prepared.size >= PREPARED_PER_CONNECTION) return known;
    const name = `cds_${++this.#named}`;
    const { serialize } = protocol;
    const preparing = this.pglite
      ._runExclusiveQuery(() =>
        this.pglite.execProtocolStream(
          concat(serialize.parse({ name, text }), serialize.describe({ type: "S", name }), serialize.sync()),
          { syncToFs: false },
        ),
      )
      .then((messages) => {
        const described = messages.find((m) => m.name === "parameterDescription") as
          | { dataTypeIDs?: number[] }
          | undefined;
        return { name, types: described?.dataTypeIDs ?? [] };
      });
    this.#prepared.set(text, preparing);
    preparing.catch(() => {
      if (this.#prepared.get(text) === preparing) this.#prepared.delete(text);
    });
    return preparing;
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

  constructor(
    private readonly pglite: PGlite,
    prepare: boolean,
  ) {
    this.#connection = new PGliteConnection(pglite, prepare);
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
    await connection.executeQuery(CompiledQuery.raw(beginCommand(settings)));
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
  constructor(
    private readonly pglite: PGlite,
    private readonly options: { preparedStatements?: boolean } = {},
  ) {}

  createAdapter() {
    return new PostgresAdapter();
  }
  createDriver(): Driver {
    return new PGliteDriver(this.pglite, this.options.preparedStatements !== false);
  }
  createQueryCompiler() {
    return new PostgresQueryCompiler();
  }
  createIntrospector(db: Kysely<unknown>) {
    return new PostgresIntrospector(db);
  }
}
