import pg from "pg";
import { serviceMigrations } from "../../src/context.js";
import { randomBase62 } from "../../src/platform/crypto.js";
import { type Db, openDb } from "../../src/platform/db/index.js";
import { migrate } from "../../src/platform/migrate.js";

/** The PostgreSQL server under test, or undefined to test on the embedded database. */
export const SERVER_URL = process.env.DATABASE_URL || undefined;

export interface TestDatabase {
  db: Db;
  /** The URL of this test's own database (PostgreSQL only), for child processes. */
  url: string | undefined;
  drop(): Promise<void>;
}

/** A fresh, empty database of its own, not yet migrated (PostgreSQL only). */
export async function createServerDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  if (!SERVER_URL) throw new Error("createServerDatabase needs DATABASE_URL");
  const name = `cds_test_${randomBase62(10).toLowerCase()}`;
  const admin = new pg.Client({ connectionString: SERVER_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(SERVER_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: SERVER_URL });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

/**
 * Each test file gets a database of its own: an in-memory PGlite, or a new database on the
 * PostgreSQL server of DATABASE_URL. Migrated unless told otherwise.
 */
export async function createTestDatabase(
  options: { migrate?: boolean; poolSize?: number } = {},
): Promise<TestDatabase> {
  if (!SERVER_URL) {
    const db = await openDb({});
    if (options.migrate !== false) await migrate(db, serviceMigrations());
    return { db, url: undefined, drop: () => db.close() };
  }
  const server = await createServerDatabase();
  const db = await openDb({ databaseUrl: server.url, poolSize: options.poolSize ?? 10 });
  if (options.migrate !== false) await migrate(db, serviceMigrations());
  return {
    db,
    url: server.url,
    async drop() {
      await db.close();
      await server.drop();
    },
  };
}
