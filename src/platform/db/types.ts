/**
 * Value parsing shared by both drivers, so that a row reads the same from PGlite and from
 * PostgreSQL: int8 as a JavaScript number (refused beyond 2^53, which no column of ours
 * reaches), numeric as its exact decimal string, date as `YYYY-MM-DD`. Timestamps and JSON
 * keep both drivers' defaults (Date, parsed JSON), which already agree.
 */
export const OID = {
  INT8: 20,
  NUMERIC: 1700,
  DATE: 1082,
  INT8_ARRAY: 1016,
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

export const sharedParsers: Record<number, (raw: string) => unknown> = {
  [OID.INT8]: parseInt8,
  [OID.NUMERIC]: parseText,
  [OID.DATE]: parseText,
};
