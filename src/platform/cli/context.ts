import type { OperatorClient } from "./client.js";

/** What a feature's CLI commands get: the operator API client and the ways to answer. */
export interface CliContext {
  client(): OperatorClient;
  /** Prints a result (pretty JSON on stdout). */
  print(value: unknown): void;
  /** Prints a result for a human to read, line by line, on stdout. */
  write(lines: string[]): void;
  /** Prints a remark for a human on stderr. */
  note(message: string): void;
}

/** `a,b , c` → `["a","b","c"]`. */
export function list(value: string): string[] {
  return value
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}

export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`expected a positive integer, got "${value}"`);
  return n;
}
