import { AsyncLocalStorage } from "node:async_hooks";
import type { DatabaseConnection, Dialect, Driver, Kysely, TransactionSettings } from "kysely";

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

class GuardedDriver implements Driver {
  constructor(private readonly inner: Driver) {}

  init(): Promise<void> {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const store = scope.getStore();
    if (store?.holding) throw new NestedQueryError();
    const connection = await this.inner.acquireConnection();
    if (store) store.holding = true;
    return connection;
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return this.inner.beginTransaction(connection, settings);
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return this.inner.commitTransaction(connection);
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return this.inner.rollbackTransaction(connection);
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    const store = scope.getStore();
    if (store) store.holding = false;
    return this.inner.releaseConnection(connection);
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
