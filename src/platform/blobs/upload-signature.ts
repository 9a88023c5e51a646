import { randomBytes } from "node:crypto";
import { hmacBase64Url, safeEqual } from "../crypto.js";
import type { Db } from "../db/index.js";
import type { PutTarget } from "./blob-store.js";

/**
 * Upload URLs are signed with one key shared by every API process: a URL minted by one process
 * is accepted by any other. The key is made once, by whichever process needs it first, and kept
 * in `service_secrets`; it never changes, so each process may keep it in memory.
 */
export const SIGNING_KEY_NAME = "upload-url-signing-key";

export async function loadSigningKey(db: Db): Promise<Buffer> {
  // Two statements, each committing on its own: a key is never cached from a transaction that
  // could still roll back.
  await db.root
    .insertInto("service_secrets")
    .values({ name: SIGNING_KEY_NAME, value: randomBytes(32).toString("base64url") })
    .onConflict((oc) => oc.column("name").doNothing())
    .execute();
  const row = await db.root
    .selectFrom("service_secrets")
    .select("value")
    .where("name", "=", SIGNING_KEY_NAME)
    .executeTakeFirstOrThrow();
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
