import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { serviceMigrations } from "../src/context.js";
import { type Db, openDb } from "../src/platform/db/index.js";
import { migrate, readMigrations } from "../src/platform/migrate.js";
import { createTestDatabase, type TestDatabase } from "./support/db.js";

let database: TestDatabase;
const others: Db[] = [];

beforeAll(async () => {
  database = await createTestDatabase({ migrate: false });
});

afterAll(async () => {
  for (const db of others) await db.close();
  await database.drop();
});

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/**
 * The test file's database emptied, and a way to reach it a second time: on PostgreSQL a handle
 * of its own (its own pool, like another process); on the embedded database the one handle.
 */
async function fresh(): Promise<{ db: Db; other(): Promise<Db> }> {
  await sql`DROP SCHEMA public CASCADE; CREATE SCHEMA public`.execute(database.db.root);
  return {
    db: database.db,
    async other() {
      if (!database.url) return database.db;
      const db = await openDb({ databaseUrl: database.url, poolSize: 2 });
      others.push(db);
      return db;
    },
  };
}

function migrationsDir(files: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cds-migrations-"));
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Tables, columns, indexes and constraints of the public schema, as comparable text. */
async function schemaOf(db: Db): Promise<string[]> {
  const columns = await sql<{ d: string }>`
    SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable
           || ' ' || coalesce(column_default, '') AS d
    FROM information_schema.columns WHERE table_schema = 'public'`.execute(db.root);
  const indexes = await sql<{ d: string }>`
    SELECT indexdef AS d FROM pg_indexes WHERE schemaname = 'public'`.execute(db.root);
  const constraints = await sql<{ d: string }>`
    SELECT conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid) AS d
    FROM pg_constraint WHERE connamespace = 'public'::regnamespace`.execute(db.root);
  return [...columns.rows, ...indexes.rows, ...constraints.rows].map((r) => r.d).sort();
}

async function recorded(db: Db) {
  return db.root.selectFrom("schema_migrations").selectAll().orderBy("version").execute();
}

describe("migrate", () => {
  it("applies every migration in order and records each with its checksum", async () => {
    const { db } = await fresh();
    const all = serviceMigrations();
    expect(all.length).toBeGreaterThan(0);
    expect(all.map((m) => m.version)).toEqual([...all.map((m) => m.version)].sort((a, b) => a - b));
    const report = await migrate(db, serviceMigrations());
    expect(report).toEqual({
      applied: all.map((m) => ({ version: m.version, name: m.name })),
      alreadyApplied: 0,
    });
    expect((await recorded(db)).map((r) => [r.version, r.name, r.checksum])).toEqual(
      all.map((m) => [m.version, m.name, m.checksum]),
    );
  });

  it("changes nothing on a second run", async () => {
    const { db } = await fresh();
    await migrate(db, serviceMigrations());
    const schema = await schemaOf(db);
    const records = await recorded(db);
    const again = await migrate(db, serviceMigrations());
    expect(again).toEqual({ applied: [], alreadyApplied: serviceMigrations().length });
    expect(await schemaOf(db)).toEqual(schema);
    expect(await recorded(db)).toEqual(records);
  });

  it("renames the screening verdicts recorded as not_a_match to no_match, and refuses the former name after", async () => {
    const { db } = await fresh();
    const all = serviceMigrations();
    await migrate(
      db,
      all.filter((m) => m.version < 23),
    );
    const tenant = "00000000-0000-4000-8000-000000000023";
    await sql`INSERT INTO tenants (id, name) VALUES (${tenant}, 'Verdicts')`.execute(db.root);
    for (const verdict of ["match", "not_a_match"]) {
      await sql`
        INSERT INTO screening_reviews (tenant_id, case_id, broker_id, hit_id, verdict, reason, actor, hit)
        VALUES (${tenant}, gen_random_uuid(), 'opensanctions', ${`hit-${verdict}`}, ${verdict}, 'why',
                'analyst:x', '{}')`.execute(db.root);
    }
    await migrate(db, all);
    const rows = await db.root
      .selectFrom("screening_reviews")
      .select(["hit_id", "verdict"])
      .orderBy("id")
      .execute();
    expect(rows).toEqual([
      { hit_id: "hit-match", verdict: "match" },
      { hit_id: "hit-not_a_match", verdict: "no_match" },
    ]);
    const former = await sql`
      INSERT INTO screening_reviews (tenant_id, case_id, broker_id, hit_id, verdict, reason, actor, hit)
      VALUES (${tenant}, gen_random_uuid(), 'opensanctions', 'h', 'not_a_match', 'why', 'analyst:x', '{}')`
      .execute(db.root)
      .then(
        () => "inserted",
        (err: Error) => err.message,
      );
    expect(former).toMatch(/screening_reviews_verdict_check/);
  });

  it("stops when a recorded migration's file has changed, and applies nothing after it", async () => {
    const { db } = await fresh();
    const dir = migrationsDir({
      "0001_first.sql": "CREATE TABLE first_table (id int);",
    });
    await migrate(db, readMigrations(dir));
    fs.writeFileSync(path.join(dir, "0001_first.sql"), "CREATE TABLE first_table (id int, extra text);");
    fs.writeFileSync(path.join(dir, "0002_second.sql"), "CREATE TABLE second_table (id int);");
    await expect(migrate(db, readMigrations(dir))).rejects.toThrow(
      "migration 1 (first) was changed after it was applied",
    );
    const tables = await sql<{ t: string }>`
      SELECT table_name AS t FROM information_schema.tables WHERE table_schema = 'public' AND table_name <> 'schema_migrations'`.execute(
      db.root,
    );
    expect(tables.rows).toEqual([{ t: "first_table" }]);
    expect((await recorded(db)).map((r) => r.version)).toEqual([1]);
  });

  it("stops when the database has a migration this build does not know", async () => {
    const { db } = await fresh();
    const dir = migrationsDir({
      "0001_first.sql": "CREATE TABLE first_table (id int);",
      "0002_second.sql": "CREATE TABLE second_table (id int);",
    });
    await migrate(db, readMigrations(dir));
    fs.rmSync(path.join(dir, "0002_second.sql"));
    await expect(migrate(db, readMigrations(dir))).rejects.toThrow(
      "the database has migration 2 (second), which this build does not know",
    );
  });

  it("rolls a failing migration back entirely and leaves the ones before it applied", async () => {
    const { db } = await fresh();
    const dir = migrationsDir({
      "0001_good.sql": "CREATE TABLE good_table (id int);",
      "0002_bad.sql": "CREATE TABLE half_table (id int);\nINSERT INTO missing_table VALUES (1);",
      "0003_later.sql": "CREATE TABLE later_table (id int);",
    });
    await expect(migrate(db, readMigrations(dir))).rejects.toThrow(/missing_table/);
    const tables = await sql<{ t: string }>`
      SELECT table_name AS t FROM information_schema.tables WHERE table_schema = 'public' AND table_name <> 'schema_migrations'`.execute(
      db.root,
    );
    expect(tables.rows).toEqual([{ t: "good_table" }]);
    expect((await recorded(db)).map((r) => r.version)).toEqual([1]);
    // Fixed, the run picks up where it stopped.
    fs.writeFileSync(path.join(dir, "0002_bad.sql"), "CREATE TABLE half_table (id int);");
    const report = await migrate(db, readMigrations(dir));
    expect(report.applied.map((m) => m.version)).toEqual([2, 3]);
    expect(report.alreadyApplied).toBe(1);
  });

  it("applies each migration once when two migrators run at once", async () => {
    const { db, other } = await fresh();
    const second = await other();
    const all = serviceMigrations();
    const reports = await Promise.all([
      migrate(db, serviceMigrations()),
      migrate(second, serviceMigrations()),
    ]);
    const applied = reports.flatMap((r) => r.applied.map((m) => m.version)).sort((a, b) => a - b);
    expect(applied).toEqual(all.map((m) => m.version));
    expect((await recorded(db)).map((r) => r.version)).toEqual(all.map((m) => m.version));
  });

  it("makes a second migrator wait for a slow first one instead of applying its migrations again", async () => {
    const { db, other } = await fresh();
    const second = await other();
    const dir = migrationsDir({
      "0001_slow.sql": "CREATE TABLE slow_table (id int);\nSELECT pg_sleep(0.3);",
      "0002_next.sql": "CREATE TABLE next_table (id int);",
    });
    const migrations = readMigrations(dir);
    const reports = await Promise.all([migrate(db, migrations), migrate(second, migrations)]);
    expect(reports.map((r) => r.applied.length).sort()).toEqual([0, 2]);
    expect(reports.map((r) => r.alreadyApplied).sort()).toEqual([0, 2]);
  });
});

describe("readMigrations", () => {
  it("refuses a file not named NNNN_name.sql and two files with one number", () => {
    expect(() => readMigrations(migrationsDir({ "1_first.sql": "" }))).toThrow(
      "migration file name 1_first.sql is not NNNN_name.sql",
    );
    expect(() => readMigrations(migrationsDir({ "0001_first.sql": "", "0001_again.sql": "" }))).toThrow(
      /two migrations are numbered 1/,
    );
  });
});
