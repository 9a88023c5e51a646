import pg from "pg";

/** The PostgreSQL server the bench uses (BENCH_DATABASE_SERVER), on which it makes a database per server. */
export const DATABASE_SERVER = process.env.BENCH_DATABASE_SERVER ?? "postgres://postgres@127.0.0.1:5432";

function serverUrl(database: string): string {
  const url = new URL(DATABASE_SERVER);
  url.pathname = `/${database}`;
  return url.toString();
}

/** The server's version string, or undefined when no server answers. */
export async function serverVersion(): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: serverUrl("postgres"), connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    const result = await client.query<{ v: string }>("SELECT current_setting('server_version') AS v");
    return result.rows[0]?.v;
  } catch {
    return undefined;
  } finally {
    await client.end().catch(() => {});
  }
}

/** A new empty database on the server; `drop` removes it (also while connections remain). */
export async function createDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `cds_bench_${Date.now()}_${Math.floor(Math.random() * 1e6)}`;
  const admin = new pg.Client({ connectionString: serverUrl("postgres") });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  return {
    url: serverUrl(name),
    async drop() {
      const client = new pg.Client({ connectionString: serverUrl("postgres") });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}
