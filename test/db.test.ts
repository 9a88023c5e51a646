import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { CompiledQuery, sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DataDirInUseError } from "../src/platform/db/dir-lock.js";
import { NestedQueryError } from "../src/platform/db/guard.js";
import {
  type Db,
  isUniqueViolation,
  lastStatement,
  openDb,
  openingStatement,
  withinBudget,
} from "../src/platform/db/index.js";
import { runTs } from "./support/children/process.js";
import { createTestDatabase, SERVER_URL, type TestDatabase } from "./support/db.js";

let database: TestDatabase;
let db: Db;

beforeAll(async () => {
  database = await createTestDatabase();
  db = database.db;
  await sql`CREATE TABLE race_rows (label text NOT NULL)`.execute(db.root);
  await sql`
    CREATE TABLE typed_values (
      id       int8 PRIMARY KEY,
      amount   numeric(20, 4),
      day      date,
      doc      jsonb,
      plain    json,
      labels   text[],
      counts   int8[],
      at       timestamptz,
      raw      bytea
    )`.execute(db.root);
});

afterAll(async () => {
  await database.drop();
});

async function labels(): Promise<string[]> {
  const result = await sql<{ label: string }>`SELECT label FROM race_rows ORDER BY label`.execute(db.root);
  return result.rows.map((r) => r.label);
}

describe("transactions", () => {
  it("never lets a concurrent COMMIT commit the row of a transaction that rolls back", async () => {
    await sql`DELETE FROM race_rows`.execute(db.root);
    for (let round = 0; round < 5; round++) {
      let otherCommitted!: () => void;
      const committed = new Promise<void>((resolve) => {
        otherCommitted = resolve;
      });
      // Both start at once; the doomed one holds its row until the other has committed (on
      // PostgreSQL) or for a moment (on the embedded database, where the other must wait).
      const doomed = db.transaction(async (tx) => {
        await sql`INSERT INTO race_rows (label) VALUES (${`doomed-${round}`})`.execute(tx);
        await Promise.race([committed, delay(100)]);
        throw new Error("roll back");
      });
      const kept = db
        .transaction(async (tx) => {
          await sql`INSERT INTO race_rows (label) VALUES (${`kept-${round}`})`.execute(tx);
        })
        .then(otherCommitted);
      await expect(doomed).rejects.toThrow("roll back");
      await kept;
    }
    expect(await labels()).toEqual(["kept-0", "kept-1", "kept-2", "kept-3", "kept-4"]);
  });

  it("never shows a transaction's uncommitted row to a query outside it", async () => {
    await sql`DELETE FROM race_rows`.execute(db.root);
    let inserted!: () => void;
    const rowWritten = new Promise<void>((resolve) => {
      inserted = resolve;
    });
    const doomed = db.transaction(async (tx) => {
      await sql`INSERT INTO race_rows (label) VALUES ('uncommitted')`.execute(tx);
      inserted();
      await delay(50);
      throw new Error("roll back");
    });
    await rowWritten;
    const seen = await labels();
    await expect(doomed).rejects.toThrow("roll back");
    expect(seen).toEqual([]);
    expect(await labels()).toEqual([]);
  });

  it("commits the writes of many interleaved transactions exactly when each commits", async () => {
    await sql`DELETE FROM race_rows`.execute(db.root);
    await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) =>
        db.transaction(async (tx) => {
          await sql`INSERT INTO race_rows (label) VALUES (${`row-${String(i).padStart(2, "0")}`})`.execute(
            tx,
          );
          await delay(i % 3);
          if (i % 2 === 1) throw new Error("odd rows roll back");
        }),
      ),
    );
    expect(await labels()).toEqual(
      Array.from({ length: 10 }, (_, i) => `row-${String(i * 2).padStart(2, "0")}`),
    );
  });

  it("refuses a query on the root executor inside a transaction with NestedQueryError", async () => {
    await sql`DELETE FROM race_rows`.execute(db.root);
    const attempt = db.transaction(async (tx) => {
      await sql`INSERT INTO race_rows (label) VALUES ('inside')`.execute(tx);
      await sql`SELECT 1`.execute(db.root);
    });
    await expect(attempt).rejects.toBeInstanceOf(NestedQueryError);
    await expect(db.transaction(() => db.transaction(async () => {}))).rejects.toBeInstanceOf(
      NestedQueryError,
    );
    // The refused transaction rolled back and gave its connection back.
    expect(await labels()).toEqual([]);
    const after = await db.transaction((tx) => sql<{ one: number }>`SELECT 1 AS one`.execute(tx));
    expect(after.rows).toEqual([{ one: 1 }]);
  });

  // Decision 0037. VACUUM tells the two apart: PostgreSQL refuses it inside a transaction block.
  it("runs a transaction's last statement on its own when nothing came before it, and inside it otherwise", async () => {
    await sql`DELETE FROM race_rows`.execute(db.root);
    const vacuum = () => CompiledQuery.raw("VACUUM race_rows");
    await db.transaction((tx) => tx.executeQuery(lastStatement(vacuum())));
    // Unmarked, the same statement goes after a BEGIN.
    await expect(db.transaction((tx) => tx.executeQuery(vacuum()))).rejects.toThrow(/transaction block/);
    // After a statement, the last one is in the transaction: a failure after it undoes both.
    const insert = (label: string) => sql`INSERT INTO race_rows (label) VALUES (${label})`.compile(db.root);
    const undone = db.transaction(async (tx) => {
      await tx.executeQuery(insert("first"));
      await tx.executeQuery(lastStatement(insert("last")));
      throw new Error("roll back");
    });
    await expect(undone).rejects.toThrow("roll back");
    expect(await labels()).toEqual([]);
    // A transaction that is its one statement refuses another after it.
    const after = db.transaction(async (tx) => {
      await tx.executeQuery(lastStatement(insert("alone")));
      await tx.executeQuery(insert("after"));
    });
    await expect(after).rejects.toThrow(/after its transaction's last statement/);
    expect(await labels()).toEqual(["alone"]);
    // A transaction that sends nothing begins nothing, and the connection goes on as before.
    await db.transaction(async () => {});
    const plain = await db.transaction(async (tx) => {
      await tx.executeQuery(insert("plain"));
      return sql<{ n: number }>`SELECT count(*)::int AS n FROM race_rows`.execute(tx);
    });
    expect(plain.rows).toEqual([{ n: 2 }]);
  });

  // Decision 0037. SAVEPOINT tells a statement in a transaction from one alone: outside a
  // transaction block both databases refuse it.
  it("sends a transaction's opening statement with its BEGIN, and rolls both back", async () => {
    await sql`DELETE FROM race_rows`.execute(db.root);
    const opening = () =>
      openingStatement(CompiledQuery.raw("SAVEPOINT opening; SET LOCAL application_name = 'cds-opening'"));
    // Unmarked and alone, the savepoint is refused.
    await expect(
      db.transaction((tx) => tx.executeQuery(lastStatement(CompiledQuery.raw("SAVEPOINT opening")))),
    ).rejects.toThrow(/transaction block/);
    const undone = db.transaction(async (tx) => {
      await tx.executeQuery(opening());
      if (SERVER_URL) {
        // One round trip: the server's last text from this session is the BEGIN and the statement.
        const { rows } = await sql<{ query: string }>`
          SELECT query FROM pg_stat_activity
          WHERE application_name = 'cds-opening' AND datname = current_database()`.execute(
          db.boundedReads(1234) as NonNullable<ReturnType<Db["boundedReads"]>>,
        );
        expect(rows.map((r) => r.query)).toEqual([
          "begin; SAVEPOINT opening; SET LOCAL application_name = 'cds-opening'",
        ]);
      }
      await sql`INSERT INTO race_rows (label) VALUES ('opened')`.execute(tx);
      throw new Error("roll back");
    });
    await expect(undone).rejects.toThrow("roll back");
    expect(await labels()).toEqual([]);
    // After another statement it runs as it is, in the same transaction.
    await db.transaction(async (tx) => {
      await sql`INSERT INTO race_rows (label) VALUES ('first')`.execute(tx);
      await tx.executeQuery(opening());
      await sql`INSERT INTO race_rows (label) VALUES ('second')`.execute(tx);
      await tx.executeQuery(CompiledQuery.raw("ROLLBACK TO SAVEPOINT opening"));
    });
    expect(await labels()).toEqual(["first"]);
    // A statement with parameters cannot carry a BEGIN.
    expect(() => openingStatement(sql`SELECT ${1}`.compile(db.root))).toThrow(/no parameters/);
  });
});

describe("values", () => {
  it("reads int8, numeric, date, json, arrays, timestamptz and bytea back identically on both drivers", async () => {
    await sql`
      INSERT INTO typed_values (id, amount, day, doc, plain, labels, counts, at, raw)
      VALUES (
        ${9_007_199_254_740_991}, ${"12.5"}, ${"2024-02-29"},
        ${JSON.stringify({ nested: { list: [1, "two", null, true] }, big: 1.5e300 })}::jsonb,
        ${JSON.stringify({ keep: "order", a: 1 })}::json,
        ${["plain", "with,comma", 'with "quotes"', "with {braces}", "", "NULL"]},
        ${[0, -1, 9_007_199_254_740_991]},
        ${new Date("2024-01-02T03:04:05.678Z")},
        ${Buffer.from([0, 1, 254, 255])}
      )`.execute(db.root);
    const row = await sql`SELECT * FROM typed_values WHERE id = ${9_007_199_254_740_991}`.execute(db.root);
    expect(row.rows).toEqual([
      {
        id: 9_007_199_254_740_991,
        amount: "12.5000",
        day: "2024-02-29",
        doc: { big: 1.5e300, nested: { list: [1, "two", null, true] } },
        plain: { keep: "order", a: 1 },
        labels: ["plain", "with,comma", 'with "quotes"', "with {braces}", "", "NULL"],
        counts: [0, -1, 9_007_199_254_740_991],
        at: new Date("2024-01-02T03:04:05.678Z"),
        raw: Buffer.from([0, 1, 254, 255]),
      },
    ]);
  });

  it("reads computed values the same way: count, sums, literal arrays and NULLs", async () => {
    const result = await sql`
      SELECT count(*) AS n,
             sum(x) AS total,
             avg(x) AS mean,
             '{}'::text[] AS empty,
             ARRAY['2020-01-01', NULL]::date[] AS days,
             ARRAY[1.50, 2]::numeric[] AS amounts,
             NULL::int8 AS nothing,
             ARRAY[[1, 2], [3, 4]]::int8[] AS matrix
      FROM (VALUES (1::int8), (2::int8), (4::int8)) AS t(x)`.execute(db.root);
    expect(result.rows).toEqual([
      {
        n: 3,
        total: "7",
        mean: "2.3333333333333333",
        empty: [],
        days: ["2020-01-01", null],
        amounts: ["1.50", "2"],
        nothing: null,
        matrix: [
          [1, 2],
          [3, 4],
        ],
      },
    ]);
  });

  it("refuses an int8 beyond 2^53 instead of rounding it, and keeps working", async () => {
    for (const query of [
      sql`SELECT 9007199254740993::int8 AS x`,
      sql`SELECT ARRAY[9007199254740993]::int8[] AS x`,
      sql`SELECT -9007199254740993::int8 AS x`,
    ]) {
      await expect(query.execute(db.root)).rejects.toThrow(/int8 value -?9007199254740993 is outside/);
    }
    const ok = await sql`SELECT 9007199254740991::int8 AS x`.execute(db.root);
    expect(ok.rows).toEqual([{ x: 9_007_199_254_740_991 }]);
  });
});

describe("errors", () => {
  it("recognises unique violations, by constraint too, and nothing else", async () => {
    const id = "00000000-0000-4000-8000-00000000abcd";
    await sql`INSERT INTO tenants (id, name) VALUES (${id}, 'first')`.execute(db.root);
    const duplicate = await sql`INSERT INTO tenants (id, name) VALUES (${id}, 'second')`
      .execute(db.root)
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    expect(isUniqueViolation(duplicate)).toBe(true);
    expect(isUniqueViolation(duplicate, "tenants_pkey")).toBe(true);
    expect(isUniqueViolation(duplicate, "api_keys_hash")).toBe(false);

    const foreignKey = await sql`
      INSERT INTO tag_options (tenant_id, tag, enabled)
      VALUES ('00000000-0000-4000-8000-00000000ffff', 'x', true)`
      .execute(db.root)
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    expect(foreignKey).toMatchObject({ code: "23503" });
    expect(isUniqueViolation(foreignKey)).toBe(false);
    expect(isUniqueViolation(new Error("duplicate"))).toBe(false);
    expect(isUniqueViolation(null)).toBe(false);
  });
});

// About the embedded database only: the PostgreSQL run of the suite leaves it to the embedded one.
describe.skipIf(SERVER_URL)("the embedded database's directory", () => {
  const dirs: string[] = [];
  function freshDir(): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cds-lock-"));
    dirs.push(dir);
    return dir;
  }
  afterAll(() => {
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  it("makes a second process on the same directory fail at once, naming the process that holds it", async () => {
    const dir = freshDir();
    const held = await openDb({ dataDir: dir });
    try {
      const second = runTs("test/support/children/open-data-dir.ts", [dir]);
      expect(await second.exited).toBe(3);
      expect(second.stdout()).toBe("");
      expect(second.stderr()).toContain(`already in use by process ${process.pid}`);
      expect(second.stderr()).toContain("CDS_DATA_DIR");
      // The holder is unharmed.
      expect((await sql`SELECT 1 AS one`.execute(held.root)).rows).toEqual([{ one: 1 }]);
    } finally {
      await held.close();
    }
    expect(fs.existsSync(path.join(dir, "cds.lock"))).toBe(false);
  });

  it("refuses a second open of the same directory within one process", async () => {
    const dir = freshDir();
    const held = await openDb({ dataDir: dir });
    try {
      await expect(openDb({ dataDir: dir })).rejects.toBeInstanceOf(DataDirInUseError);
      await expect(openDb({ dataDir: dir })).rejects.toThrow("already in use by this process");
    } finally {
      await held.close();
    }
  });

  it("takes over the lock of a process that was killed, keeping the data it committed", async () => {
    const dir = freshDir();
    const setup = await openDb({ dataDir: dir });
    await sql`CREATE TABLE survivors (name text)`.execute(setup.root);
    await sql`INSERT INTO survivors VALUES ('before the crash')`.execute(setup.root);
    await setup.close();

    const holder = runTs("test/support/children/open-data-dir.ts", [dir, "hold"]);
    await holder.line(/^opened by \d+$/);
    expect(fs.readFileSync(path.join(dir, "cds.lock"), "utf8")).toBe(String(holder.pid));
    holder.kill("SIGKILL");
    expect(await holder.exited).toBe("SIGKILL");

    const next = await openDb({ dataDir: dir });
    try {
      expect(fs.readFileSync(path.join(dir, "cds.lock"), "utf8")).toBe(String(process.pid));
      const rows = await sql`SELECT name FROM survivors`.execute(next.root);
      expect(rows.rows).toEqual([{ name: "before the crash" }]);
    } finally {
      await next.close();
    }
  });
});

describe("prepared statements (decision 0030)", () => {
  /** The names of the prepared statements of the one connection of a pool of one (of the embedded session). */
  const preparedOn = async (one: Db) =>
    (
      await sql<{ name: string }>`SELECT name FROM pg_prepared_statements ORDER BY name`.execute(one.root)
    ).rows.map((r) => r.name);
  /** A database of one connection; on the embedded database, a session of its own. */
  const openOne = async (preparedStatements?: boolean): Promise<Db> => {
    const one = await openDb({ databaseUrl: database.url, poolSize: 1, preparedStatements });
    if (!SERVER_URL) await sql`CREATE TABLE race_rows (label text NOT NULL)`.execute(one.root);
    return one;
  };

  it("run a statement with parameters as a prepared statement of its connection, and one without as before", async () => {
    const one = await openOne();
    try {
      const read = () => sql`SELECT label FROM race_rows WHERE label = ${"prepared-probe"}`.execute(one.root);
      await read();
      await read();
      const names = await preparedOn(one);
      expect(names).toHaveLength(1);
      expect(names[0]).toMatch(/^cds_/);
      // The same text finds the same statement; a statement without parameters prepares nothing.
      await sql`SELECT 1`.execute(one.root);
      expect(await preparedOn(one)).toEqual(names);
    } finally {
      await one.close();
    }
  });

  it("are not made when turned off (CDS_DB_PREPARED_STATEMENTS=false)", async () => {
    const one = await openOne(false);
    try {
      await sql`SELECT label FROM race_rows WHERE label = ${"x"}`.execute(one.root);
      expect(await preparedOn(one)).toEqual([]);
    } finally {
      await one.close();
    }
  });

  it("prepare each text once when a transaction's statements come at once, and answer each its own rows", async () => {
    const one = await openOne();
    try {
      const answers = await one.transaction(async (tx) =>
        Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            i % 3 === 0
              ? sql<{ n: number }>`SELECT ${i}::int AS n`.execute(tx)
              : i % 3 === 1
                ? sql<{ n: number }>`SELECT ${i}::int + 0 AS n`.execute(tx)
                : sql<{ n: number }>`SELECT ${i}::int * 1 AS n`.execute(tx),
          ),
        ),
      );
      expect(answers.map((r) => r.rows[0]?.n)).toEqual(Array.from({ length: 12 }, (_, i) => i));
      expect(await preparedOn(one)).toHaveLength(3);
    } finally {
      await one.close();
    }
  });

  it("forget a text that fails to prepare, and keep serving the others", async () => {
    const one = await openOne();
    try {
      await expect(sql`SELECT * FROM no_such_table WHERE x = ${1}`.execute(one.root)).rejects.toMatchObject({
        code: "42P01",
      });
      await expect(sql`SELECT * FROM no_such_table WHERE x = ${1}`.execute(one.root)).rejects.toMatchObject({
        code: "42P01",
      });
      const { rows } = await sql<{ n: number }>`SELECT ${7}::int AS n`.execute(one.root);
      expect(rows).toEqual([{ n: 7 }]);
      expect(await preparedOn(one)).toHaveLength(1);
    } finally {
      await one.close();
    }
  });

  it("survive a column added while they run: the statement that read the table whole runs again unnamed", async () => {
    const one = await openOne();
    // On the embedded database the session is the one connection: the change comes through it.
    const other = SERVER_URL ? db : one;
    try {
      await sql`CREATE TABLE widening (id int8 PRIMARY KEY, label text)`.execute(other.root);
      await sql`INSERT INTO widening VALUES (1, 'one')`.execute(other.root);
      const whole = async () => (await sql`SELECT * FROM widening WHERE id = ${1}`.execute(one.root)).rows;
      expect(await whole()).toEqual([{ id: 1, label: "one" }]);
      await sql`ALTER TABLE widening ADD COLUMN added text DEFAULT 'new'`.execute(other.root);
      expect(await whole()).toEqual([{ id: 1, label: "one", added: "new" }]);
      expect(await whole()).toEqual([{ id: 1, label: "one", added: "new" }]);
    } finally {
      if (SERVER_URL) await sql`DROP TABLE widening`.execute(db.root);
      await one.close();
    }
  });
});

describe("bounded reads", () => {
  it.skipIf(!SERVER_URL)(
    "run with their statement timeout and without parallel workers, beside live work",
    async () => {
      const reader = db.boundedReads(1234);
      if (!reader) throw new Error("PostgreSQL gives bounded reads");
      const { rows } = await sql<{ timeout: string; parallel: string }>`
      SELECT current_setting('statement_timeout') AS timeout,
             current_setting('max_parallel_workers_per_gather') AS parallel`.execute(reader);
      expect(rows[0]).toEqual({ timeout: "1234ms", parallel: "0" });
      // The main pool keeps the server's own setting.
      const main = await sql<{ parallel: string }>`
      SELECT current_setting('max_parallel_workers_per_gather') AS parallel`.execute(db.root);
      expect(main.rows[0]?.parallel).not.toBe("0");
    },
  );

  it.skipIf(SERVER_URL)("are none on the embedded database, which has one connection", () => {
    expect(db.boundedReads(1234)).toBeNull();
  });

  it.skipIf(!SERVER_URL)(
    "run in a transaction with the same settings, for their savepoint alone, and a read past the budget leaves the transaction going",
    async () => {
      const settings = sql<{ timeout: string; parallel: string; plans: string }>`
        SELECT current_setting('statement_timeout') AS timeout,
               current_setting('max_parallel_workers_per_gather') AS parallel,
               current_setting('plan_cache_mode') AS plans`;
      await sql`DELETE FROM race_rows`.execute(db.root);
      await db.transaction(async (tx) => {
        const before = (await settings.execute(tx)).rows[0];
        await sql`INSERT INTO race_rows (label) VALUES ('before the reads')`.execute(tx);
        const within = await withinBudget(tx, 1234, async () => (await settings.execute(tx)).rows[0]);
        expect(within).toEqual({ timeout: "1234ms", parallel: "0", plans: "force_generic_plan" });
        expect((await settings.execute(tx)).rows[0]).toEqual(before);
        // PostgreSQL cancels a read past the budget; the transaction and its write go on.
        const slow = withinBudget(tx, 50, () => sql`SELECT pg_sleep(5)`.execute(tx));
        await expect(slow).rejects.toMatchObject({ code: "57014" });
        expect((await settings.execute(tx)).rows[0]).toEqual(before);
        await sql`INSERT INTO race_rows (label) VALUES ('after the reads')`.execute(tx);
      });
      expect(await labels()).toEqual(["after the reads", "before the reads"]);
    },
  );
});
