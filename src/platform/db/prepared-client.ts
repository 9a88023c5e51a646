import { createHash } from "node:crypto";
import pg from "pg";

/** Named statements one connection keeps at most; past it, new texts run unnamed. */
export const PREPARED_PER_CONNECTION = 256;

/** PostgreSQL's answer when a column was added to (or changed in) a table a prepared statement reads whole. */
export function isStalePlan(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return e.code === "0A000" && /cached plan must not change result type/.test(e.message ?? "");
}

/**
 * A pg client that runs each statement with parameters as a named prepared statement of its
 * connection (decision 0030): PostgreSQL parses it once per connection instead of once per
 * execution, and its plan cache may plan it once too. The name is derived from the text, so the
 * texts a query builder makes again find their statement. Statements without parameters (BEGIN,
 * COMMIT, a migration's script) run as before, in the simple protocol.
 *
 * A migration that adds a column to a table while this connection has a statement reading that
 * table whole (`SELECT *`, `RETURNING *`) makes the statement fail once: the connection then
 * stops preparing, and the statement runs again unnamed. Inside a transaction that retry fails
 * too (the transaction is aborted), and the caller's own retry applies.
 */
export class PreparingClient extends pg.Client {
  readonly #names = new Map<string, string>();
  #stale = false;

  // biome-ignore lint/suspicious/noExplicitAny: pg's overloads of query()
  override query(config: any, values?: any, callback?: any): any {
    if (
      this.#stale ||
      typeof config !== "string" ||
      !Array.isArray(values) ||
      values.length === 0 ||
      callback !== undefined
    ) {
      return super.query(config, values, callback);
    }
    let name = this.#names.get(config);
    if (name === undefined) {
      if (this.#names.size >= PREPARED_PER_CONNECTION) return super.query(config, values);
      name = `cds_${createHash("sha1").update(config).digest("base64url")}`;
      this.#names.set(config, name);
    }
    const prepared = super.query({ name, text: config, values }) as Promise<pg.QueryResult>;
    return prepared.catch((err: unknown) => {
      if (!isStalePlan(err)) throw err;
      this.#stale = true;
      this.#names.clear();
      return super.query(config, values);
    });
  }
}
