import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AmountTotal, asNumeric, throughNumeric } from "../src/modules/entities/amounts.js";
import { createTestDatabase, type TestDatabase } from "./support/db.js";

// A kept window's sums (decision 0021, "Sums kept as their windows slide") must be the figures'
// statement's to the last bit: amounts as `double precision::numeric` holds them, summed exactly,
// and doubles through `numeric` as the statement gives them. Compared here with the database itself.

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase({ migrate: false });
});
afterAll(async () => {
  await database.drop();
});

/** A generator of doubles, the same at every run. */
function* doubles(count: number): Generator<number> {
  let seed = 0x2545f491;
  const next = () => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) / 2 ** 32;
  };
  for (let i = 0; i < count; i++) {
    const kind = i % 4;
    if (kind === 0)
      yield Math.round(next() * 1e6) / 100; // an amount in cents
    else if (kind === 1)
      yield (next() - 0.5) * 10 ** Math.floor(next() * 30 - 10); // any magnitude
    else if (kind === 2)
      yield Math.round(next() * 1e7) / 1e4; // four decimals
    else yield next() * 1e12;
  }
}

/** Values where rounding to 15 digits meets a half, or a double's shortest text is longer. */
const EDGES = [
  0.1 + 0.2,
  123456789012.3125, // a half at the 16th digit: to even, .312 (JavaScript's toPrecision gives .313)
  1234567890123445, // the same in an integer
  1234567890123455,
  -123456789012.3125,
  1e-7,
  1e22,
  2.5e-300,
  Number.MAX_SAFE_INTEGER,
  0.00012345678901234567,
  99999999999999.98,
  1,
  -0.5,
];

async function cast(text: string, values: number[]): Promise<string[]> {
  const { rows } = await sql<{ v: string }>`
    SELECT (${sql.raw(text)})::text AS v FROM unnest(${values}::float8[]) WITH ORDINALITY AS u(x, n) ORDER BY n`.execute(
    database.db.root,
  );
  return rows.map((r) => r.v);
}

describe("amounts as numeric", () => {
  it("holds a double as its cast to numeric does", async () => {
    const values = [...EDGES, ...doubles(2_000)];
    const numeric = await cast("x::numeric", values);
    values.forEach((x, i) => {
      expect(throughNumeric(x), String(x)).toBe(Number(numeric[i]));
    });
  });

  it("sums amounts exactly, taking them out again, as sum(x::numeric) does", async () => {
    const values = [...EDGES.filter((x) => Math.abs(x) < 1e20 && Math.abs(x) > 1e-20), ...doubles(400)];
    const total = new AmountTotal();
    for (const x of values) total.add(asNumeric(x), 1);
    const { rows } = await sql<{
      v: string;
    }>`SELECT sum(y::numeric)::text AS v FROM unnest(${values}::float8[]) y`.execute(database.db.root);
    expect(total.sum()).toBe(Number(rows[0]?.v));
    // Take out every other one: the rest's sum, as if they had never been added.
    const rest = values.filter((_, i) => i % 2 === 1);
    values.forEach((x, i) => {
      if (i % 2 === 0) total.add(asNumeric(x), -1);
    });
    const { rows: after } = await sql<{ v: string; avg: string }>`
      SELECT sum(y::numeric)::text AS v, (sum(y::numeric)::float8 / count(y))::numeric::text AS avg
      FROM unnest(${rest}::float8[]) y`.execute(database.db.root);
    expect(total.n).toBe(rest.length);
    expect(total.sum()).toBe(Number(after[0]?.v));
    expect(throughNumeric(total.sum() / total.n)).toBe(Number(after[0]?.avg));
  });
});
