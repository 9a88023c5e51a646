import { randomBytes } from "node:crypto";

/** 256 random bits, URL-safe: session cookies and setup links. */
export function newSecretToken(): string {
  return randomBytes(32).toString("base64url");
}
