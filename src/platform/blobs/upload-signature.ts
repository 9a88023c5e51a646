import { randomBytes } from "node:crypto";
import { hmacBase64Url, safeEqual } from "../crypto.js";
import type { Db } from "../db/index.js";
import type { SecretBox } from "../secret-box.js";
import type { PutTarget } from "./blob-store.js";

/**
 * Upload URLs are signed with one key shared by every API process: a URL minted by one process
 * is accepted by any other. The key is made once, by whichever process needs it first, and kept
 * in `service_secrets` sealed with the secret key like every stored secret (decision 0012); it
 * never changes, so each process may keep it in memory.
 */
export const SIGNING_KEY_NAME = "upload-url-signing-key";
const PURPOSE = `service_secrets:${SIGNING_KEY_NAME}`;

function isSealed(value: string): boolean {
  return value.split(".").length === 5;
}

export async function loadSigningKey(db: Db, box: SecretBox): Promise<Buffer> {
  // Statements each committing on its own: a key is never cached from a transaction that could
  // still roll back.
  await db.root
    .insertInto("service_secrets")
    .values({ name: SIGNING_KEY_NAME, value: box.seal(randomBytes(32).toString("base64url"), PURPOSE) })
    .onConflict((oc) => oc.column("name").doNothing())
    .execute();
  const row = await db.root
    .selectFrom("service_secrets")
    .select("value")
    .where("name", "=", SIGNING_KEY_NAME)
    .executeTakeFirstOrThrow();
  if (isSealed(row.value)) return Buffer.from(box.open(row.value, PURPOSE), "base64url");
  // A key stored in plain text before keys were sealed: sealed in place by the first process to
  // read it (the condition on the old value lets only one write), and used as it was.
  await db.root
    .updateTable("service_secrets")
    .set({ value: box.seal(row.value, PURPOSE) })
    .where("name", "=", SIGNING_KEY_NAME)
    .where("value", "=", row.value)
    .execute();
  return Buffer.from(row.value, "base64url");
}

function canonical(target: PutTarget): string {
  const expires = Math.floor(target.expiresAt.getTime() / 1000);
  return ["PUT", target.key, target.contentType, String(target.sizeBytes), String(expires)].join("\n");
}

export function signTarget(key: Buffer, target: PutTarget): string {
  return hmacBase64Url(key, canonical(target));
}

export function signatureMatches(key: Buffer, target: PutTarget, signature: string): boolean {
  return safeEqual(signTarget(key, target), signature);
}
