import { createHash, createHmac, randomBytes, randomUUID, timingSafeEqual } from "node:crypto";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** `length` characters drawn uniformly from base62 (rejection sampling, no modulo bias). */
export function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export function uuid(): string {
  return randomUUID();
}

/**
 * A UUID that begins with the time it was made (version 7, RFC 9562): 48 bits of milliseconds,
 * then the version, then 74 random bits drawn afresh for each id. For the ids of the rows written
 * for every case (cases, events, deliveries): the primary keys, and the keys that lead with a
 * case's id, then grow at their right edge instead of at a random page of a large index
 * (decision 0033). Not for anything whose secrecy protects something: tokens and refs are drawn
 * whole at random.
 *
 * The random bits are a version 4 UUID's, whose layout after its version digit is the same:
 * `randomUUID` draws them from a buffer it refills in bulk (about 0.3 µs an id, where a
 * fresh `getRandomValues` per id took 2.7 µs).
 */
export function orderedUuid(): string {
  const now = Date.now();
  if (now !== orderedPrefix.ms) {
    const hex = now.toString(16).padStart(12, "0");
    orderedPrefix.ms = now;
    orderedPrefix.text = `${hex.slice(0, 8)}-${hex.slice(8)}-7`;
  }
  return orderedPrefix.text + randomUUID().slice(15);
}

/** The time part of the ids made in the last millisecond that made one. */
const orderedPrefix = { ms: -1, text: "" };

export function sha256(value: string | Buffer): Buffer {
  return createHash("sha256").update(value).digest();
}

export function hmacHex(secret: string | Buffer, data: string | Buffer): string {
  return createHmac("sha256", secret).update(data).digest("hex");
}

export function hmacBase64Url(secret: string | Buffer, data: string | Buffer): string {
  return createHmac("sha256", secret).update(data).digest("base64url");
}

/** Compares two strings in constant time for equal lengths; different lengths are unequal. */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

export function crc32(text: string): number {
  let crc = 0xffffffff;
  for (const byte of Buffer.from(text)) crc = (CRC_TABLE[(crc ^ byte) & 0xff] as number) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** A number as exactly `width` base62 characters (CRC32 needs 6). */
export function toBase62(n: number, width: number): string {
  let out = "";
  let rest = n;
  for (let i = 0; i < width; i++) {
    out = BASE62[rest % 62] + out;
    rest = Math.floor(rest / 62);
  }
  return out;
}

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Ids in paths are checked before they reach a uuid column: a malformed id is simply unknown. */
export function isUuid(value: string): boolean {
  return UUID_PATTERN.test(value);
}
