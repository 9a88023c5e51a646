import { AsyncLocalStorage } from "node:async_hooks";
import {
  CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
  type TransactionSettings,
} from "kysely";

/**
 * Catches a query sent to the root database from inside a transaction. On PostgreSQL such a
 * query silently runs on another connection, outside the transaction; on the embedded database
 * it waits forever for the one session the transaction holds. Either way it is a bug, so both
 * drivers refuse it at once with a message that says what to do.
 */
interface TxScope {
  holding: boolean;
}

const scope = new AsyncLocalStorage<TxScope>();

export class NestedQueryError extends Error {
  constructor() {
    super(
      "a query was sent to the root database from inside a transaction; pass the transaction handle instead",
    );
    this.name = "NestedQueryError";
  }
}

/** Runs fn in a fresh transaction scope; refuses to start one inside another. */
export function inTransactionScope<T>(fn: () => Promise<T>): Promise<T> {
  if (scope.getStore()?.holding) return Promise.reject(new NestedQueryError());
  return scope.run({ holding: false }, fn);
}

export function isInTransaction(): boolean {
  return scope.getStore()?.holding === true;
}

/**
 * Statements that may be all their transaction does: when one is the first statement of its
 * transaction, it runs on its own, without `BEGIN` and `COMMIT` (decision 0037).
 */
const lastStatements = new WeakSet<CompiledQuery>();

/**
 * Marks `query` as the last statement of the transaction it runs in, so that a transaction that
 * sent nothing before it is that one statement: one round trip instead of three. Nothing may be
 * sent after it, and it must fail whole (an error inside the statement, not a check of its
 * result afterwards) wherever its transaction would have been rolled back.
 */
export function lastStatement<Q extends CompiledQuery>(query: Q): Q {
  lastStatements.add(query);
  return query;
}

/** Statements that may carry their transaction's `BEGIN` in their round trip (decision 0037). */
const openingStatements = new WeakSet<CompiledQuery>();

/**
 * Marks `query`, a statement without parameters whose result is not read (a savepoint and its
 * settings), as one that may open its transaction: when it is the transaction's first statement,
 * `BEGIN` goes in front of it in one round trip, as one text of the simple protocol. Anywhere
 * else it runs as it is.
 */
export function openingStatement<Q extends CompiledQuery>(query: Q): Q {
  if (query.parameters.length > 0) throw new Error("an opening statement has no parameters");
  openingStatements.add(query);
  return query;
}

/**
 * The command that begins a transaction with `settings`: what the embedded database's driver
 * sends, and what an opening statement carries (kysely's PostgreSQL driver sends the same).
 */
export function beginCommand(settings: TransactionSettings): string {
  const mode = [
    settings.isolationLevel ? `isolation level ${settings.isolationLevel}` : "",
    settings.accessMode ?? "",
  ].filter(Boolean);
  return mode.length > 0 ? `start transaction ${mode.join(" ")}` : "begin";
}

/**
 * A connection whose transactions begin at their first statement: `BEGIN` goes just before it
 * (with it, for an `openingStatement`), and a transaction whose first statement is its last
 * (`lastStatement`) never begins.
 */
class DeferredConnection implements DatabaseConnection {
  /** idle: no transaction; pending: begun, nothing sent; open: BEGIN sent; alone: its one statement sent. */
  #state: "idle" | "pending" | "open" | "alone" = "idle";
  #settings: TransactionSettings = {};
  #begun: Promise<void> | undefined;

  constructor(
    readonly inner: DatabaseConnection,
    private readonly driver: Driver,
  ) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (this.#state === "pending" && openingStatements.has(query)) {
      this.#state = "open";
      const sent = this.inner.executeQuery<R>(
        CompiledQuery.raw(`${beginCommand(this.#settings)}; ${query.sql}`),
      );
      // Whether its statement succeeded or not, the BEGIN went first: the transaction is to be
      // ended, and statements sent meanwhile wait for the same round trip.
      this.#begun = sent.then(
        () => undefined,
        () => undefined,
      );
      return sent;
    }
    await this.#begin(query);
    return this.inner.executeQuery<R>(query);
  }

  async *streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    await this.#begin(query);
    yield* this.inner.streamQuery<R>(query, chunkSize);
  }

  /** Starts a transaction here, to begin at its first statement. */
  start(settings: TransactionSettings): void {
    this.#state = "pending";
    this.#settings = settings;
    this.#begun = undefined;
  }

  /** Ends the transaction here: its BEGIN, where one was sent, to commit or roll back after. */
  end(): Promise<void> | undefined {
    const begun = this.#state === "open" ? this.#begun : undefined;
    this.#state = "idle";
    this.#begun = undefined;
    return begun;
  }

  async #begin(query: CompiledQuery): Promise<void> {
    if (this.#state === "alone") {
      throw new Error("a statement was sent after its transaction's last statement");
    }
    if (this.#state === "pending") {
      if (lastStatements.has(query)) {
        this.#state = "alone";
        return;
      }
      this.#state = "open";
      // Statements sent meanwhile (a batch's cases run side by side) wait for the same BEGIN.
      this.#begun = this.driver.beginTransaction(this.inner, this.#settings);
    }
    if (this.#begun !== undefined) await this.#begun;
  }
}

class GuardedDriver implements Driver {
  readonly #connections = new WeakMap<DatabaseConnection, DeferredConnection>();

  constructor(private readonly inner: Driver) {}

  init(): Promise<void> {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const store = scope.getStore();
    if (store?.holding) throw new NestedQueryError();
    const inner = await this.inner.acquireConnection();
    if (store) store.holding = true;
    let connection = this.#connections.get(inner);
    if (!connection) {
      connection = new DeferredConnection(inner, this.inner);
      this.#connections.set(inner, connection);
    }
    return connection;
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    (connection as DeferredConnection).start(settings);
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const c = connection as DeferredConnection;
    const begun = c.end();
    if (!begun) return;
    await begun;
    await this.inner.commitTransaction(c.inner);
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const c = connection as DeferredConnection;
    const begun = c.end();
    // Nothing begun, or a BEGIN that failed: nothing to roll back.
    if (
      !begun ||
      (await begun.then(
        () => false,
        () => true,
      ))
    )
      return;
    await this.inner.rollbackTransaction(c.inner);
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    const store = scope.getStore();
    if (store) store.holding = false;
    const c = connection as DeferredConnection;
    // A transaction is over by now; its BEGIN's outcome was awaited by the statement that sent it.
    void c.end();
    return this.inner.releaseConnection(c.inner);
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}

export class GuardedDialect implements Dialect {
  constructor(private readonly inner: Dialect) {}

  createAdapter() {
    return this.inner.createAdapter();
  }
  createDriver(): Driver {
    return new GuardedDriver(this.inner.createDriver());
  }
  createQueryCompiler() {
    return this.inner.createQueryCompiler();
  }
  createIntrospector(db: Kysely<unknown>) {
    return this.inner.createIntrospector(db);
  }
}
