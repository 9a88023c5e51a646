import pg from "pg";

/**
 * Value parsing shared by both drivers, so that a row reads the same from PGlite and from
 * PostgreSQL: int8 as a JavaScript number (refused beyond 2^53, which no column of ours
 * reaches), numeric as its exact decimal string, date as `YYYY-MM-DD`, bytea as a Buffer, and
 * arrays of these element by element. Timestamps, JSON and text arrays keep both drivers'
 * defaults (Date, parsed JSON, string[]), which already agree.
 */
export const OID = {
  BYTEA: 17,
  INT8: 20,
  NUMERIC: 1700,
  DATE: 1082,
  INT8_ARRAY: 1016,
  NUMERIC_ARRAY: 1231,
  DATE_ARRAY: 1182,
  TEXT_ARRAY: 1009,
} as const;

export function parseInt8(raw: string): number {
  const n = Number(raw);
  if (!Number.isSafeInteger(n)) {
    throw new RangeError(`int8 value ${raw} is outside the safe integer range`);
  }
  return n;
}

export function parseText(raw: string): string {
  return raw;
}

/** bytea in PostgreSQL's hex output format (`\x…`, the default since 9.0). */
export function parseBytea(raw: string): Buffer {
  return Buffer.from(raw.slice(2), "hex");
}

type Nested = unknown[] | string | null;

// The array literal syntax (quoting, NULL, nesting) is parsed by node-postgres' own parser for
// text[]; only the elements are converted here.
// (Its typings list scalar type ids only, hence the cast.)
const getTypeParser = pg.types.getTypeParser as (oid: number, format: "text") => (raw: string) => Nested[];
const parseTextArray = getTypeParser(OID.TEXT_ARRAY, "text");

function mapLeaves(value: Nested, parse: (raw: string) => unknown): unknown {
  if (value === null) return null;
  if (Array.isArray(value)) return value.map((v) => mapLeaves(v as Nested, parse));
  return parse(value);
}

function arrayOf(parse: (raw: string) => unknown): (raw: string) => unknown[] {
  return (raw) => parseTextArray(raw).map((v) => mapLeaves(v, parse));
}

export const sharedParsers: Record<number, (raw: string) => unknown> = {
  [OID.BYTEA]: parseBytea,
  [OID.INT8]: parseInt8,
  [OID.NUMERIC]: parseText,
  [OID.DATE]: parseText,
  [OID.INT8_ARRAY]: arrayOf(parseInt8),
  [OID.NUMERIC_ARRAY]: arrayOf(parseText),
  [OID.DATE_ARRAY]: arrayOf(parseText),
};
