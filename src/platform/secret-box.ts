import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { sha256 } from "./crypto.js";
import { oncePer } from "./once-per.js";

/**
 * Encryption at rest of what the service must be able to read back (vendor credentials, webhook
 * signing secrets): AES-256-GCM under the key of `CDS_SECRET_KEY`, or, on the embedded
 * database, a key generated once and kept in `CDS_DATA_DIR`. A sealed value names the key that
 * sealed it (a short fingerprint), so that opening it under another key fails with a message
 * saying so instead of a bare authentication error. Each value is bound to what it is (its
 * `purpose`, e.g. the tenant and broker), so a sealed value copied to another row does not open.
 */
export interface SecretBox {
  seal(plaintext: string, purpose: string): string;
  open(sealed: string, purpose: string): string;
  /** The key's fingerprint, as written into every sealed value. */
  readonly keyId: string;
}

export class SecretBoxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SecretBoxError";
  }
}

const VERSION = "v1";
const IV_BYTES = 12;

/** 32 bytes as 64 hexadecimal characters, or as base64 / base64url (43 or 44 characters). */
export function parseSecretKey(raw: string): Buffer {
  const text = raw.trim();
  let key: Buffer | undefined;
  if (/^[0-9a-fA-F]{64}$/.test(text)) key = Buffer.from(text, "hex");
  else if (/^[A-Za-z0-9+/_-]{43}={0,1}$/.test(text)) key = Buffer.from(text, "base64url");
  if (key?.length !== 32) {
    throw new Error("expected 32 bytes: 64 hexadecimal characters, or 43 to 44 base64 characters");
  }
  return key;
}

export function secretKeyFile(dataDir: string): string {
  return path.join(dataDir, "secret-key");
}

/**
 * The embedded mode's key: the one kept in the data directory, or a new one written there
 * (readable by the owner only). Losing the file loses every stored credential: it belongs in
 * the same backups as the database.
 */
export function ensureStoredSecretKey(dataDir: string): { key: Buffer; created: boolean; file: string } {
  const file = secretKeyFile(dataDir);
  try {
    return { key: parseSecretKey(fs.readFileSync(file, "utf8")), created: false, file };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") {
      throw new Error(`${file}: ${(err as Error).message}`);
    }
  }
  fs.mkdirSync(dataDir, { recursive: true });
  const key = randomBytes(32);
  try {
    fs.writeFileSync(file, `${key.toString("hex")}\n`, { mode: 0o600, flag: "wx" });
  } catch (err) {
    // Another process of this data directory wrote it first: use that one.
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return ensureStoredSecretKey(dataDir);
    throw err;
  }
  return { key, created: true, file };
}

export function createSecretBox(key: Buffer): SecretBox {
  const keyId = sha256(Buffer.concat([Buffer.from("cds-secret-key-id:"), key]))
    .subarray(0, 6)
    .toString("base64url");
  return {
    keyId,
    seal(plaintext, purpose) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      cipher.setAAD(Buffer.from(purpose));
      const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
      const tag = cipher.getAuthTag();
      return [
        VERSION,
        keyId,
        iv.toString("base64url"),
        ciphertext.toString("base64url"),
        tag.toString("base64url"),
      ].join(".");
    },
    open(sealed, purpose) {
      const parts = sealed.split(".");
      if (parts.length !== 5 || parts[0] !== VERSION) throw new SecretBoxError("not a sealed value");
      const [, kid, iv, ciphertext, tag] = parts as [string, string, string, string, string];
      if (kid !== keyId) {
        throw new SecretBoxError(
          `the value was sealed under another key (${kid}; this process has ${keyId}): check CDS_SECRET_KEY`,
        );
      }
      try {
        const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"));
        decipher.setAAD(Buffer.from(purpose));
        decipher.setAuthTag(Buffer.from(tag, "base64url"));
        return Buffer.concat([
          decipher.update(Buffer.from(ciphertext, "base64url")),
          decipher.final(),
        ]).toString("utf8");
      } catch {
        throw new SecretBoxError("the sealed value does not open: it was altered or belongs elsewhere");
      }
    },
  };
}

/** Where a process's secret key comes from: the configuration's `secretKey` and `dataDir`. */
export interface SecretKeySource {
  readonly secretKey?: string | undefined;
  readonly dataDir: string;
}

/**
 * The box of a configuration: `CDS_SECRET_KEY` when set, else (embedded mode; the configuration
 * refuses a PostgreSQL URL without the key) the key kept in the data directory. Made once per
 * configuration.
 */
export const secretBoxOf = oncePer((config: SecretKeySource): SecretBox => {
  const key = config.secretKey ? parseSecretKey(config.secretKey) : ensureStoredSecretKey(config.dataDir).key;
  return createSecretBox(key);
});
