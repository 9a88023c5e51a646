import { crc32, randomBase62, sha256, toBase62 } from "../../platform/crypto.js";

/**
 * API key values: `cds_live_…` (production) or `cds_test_…` (staging), then 33 random base62
 * characters (196 bits) and a 6-character base62 CRC32 of everything before it. The checksum
 * lets a mistyped or truncated key, or a string that merely looks like one to a secret scanner,
 * be refused without a database lookup.
 */
export const KEY_PREFIX = { production: "cds_live_", staging: "cds_test_" } as const;
const RANDOM_LENGTH = 33;
const CHECKSUM_LENGTH = 6;
const KEY_PATTERN = /^cds_(live|test)_[0-9A-Za-z]{39}$/;

export type Environment = keyof typeof KEY_PREFIX;

function checksum(body: string): string {
  return toBase62(crc32(body), CHECKSUM_LENGTH);
}

export function generateKeyValue(env: Environment): string {
  const body = KEY_PREFIX[env] + randomBase62(RANDOM_LENGTH);
  return body + checksum(body);
}

export type KeyCheck = { ok: true } | { ok: false; reason: string };

/** Checks shape, checksum and environment, without touching the database. */
export function checkKeyValue(value: string, env: Environment): KeyCheck {
  if (!KEY_PATTERN.test(value)) return { ok: false, reason: "malformed API key" };
  const body = value.slice(0, -CHECKSUM_LENGTH);
  if (checksum(body) !== value.slice(-CHECKSUM_LENGTH)) return { ok: false, reason: "malformed API key" };
  if (!value.startsWith(KEY_PREFIX[env])) {
    return { ok: false, reason: `API key is not for the ${env} environment` };
  }
  return { ok: true };
}

export function hashKeyValue(value: string): Buffer {
  return sha256(value);
}

/** What may be shown of a key after creation: its prefix and first characters. */
export function keyHint(value: string): string {
  return `${value.slice(0, 13)}…`;
}

export function newKeyId(): string {
  return `key_${randomBase62(20)}`;
}
