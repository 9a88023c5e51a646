import { hmacHex, safeEqual } from "../../../../platform/crypto.js";

/**
 * Sumsub's wire format, shared by the broker and the simulator so that both sign and verify
 * exactly alike (contract section 5).
 */
export const APP_TOKEN_HEADER = "x-app-token";
export const TS_HEADER = "x-app-access-ts";
export const SIG_HEADER = "x-app-access-sig";
export const DIGEST_HEADER = "x-payload-digest";
export const DIGEST_ALG_HEADER = "x-payload-digest-alg";
export const DIGEST_ALG = "HMAC_SHA256_HEX";

/** `X-App-Access-Sig`: hex HMAC-SHA256 of ts + METHOD + path with query + body. */
export function requestSignature(
  secretKey: string,
  ts: string,
  method: string,
  pathWithQuery: string,
  body: string,
): string {
  return hmacHex(secretKey, `${ts}${method.toUpperCase()}${pathWithQuery}${body}`);
}

/** `X-Payload-Digest` of a webhook: hex HMAC-SHA256 of the raw body. */
export function payloadDigest(webhookSecret: string, rawBody: Buffer | string): string {
  return hmacHex(webhookSecret, rawBody);
}

export function digestMatches(
  webhookSecret: string,
  rawBody: Buffer,
  digest: string | undefined,
  alg: string | undefined,
): boolean {
  if (!digest || (alg !== undefined && alg !== DIGEST_ALG)) return false;
  return safeEqual(payloadDigest(webhookSecret, rawBody), digest.toLowerCase());
}

/** `createdAtMs` as Sumsub sends it: `yyyy-MM-dd HH:mm:ss.SSS`, UTC. */
export function formatCreatedAt(at: Date): string {
  return at.toISOString().replace("T", " ").replace("Z", "");
}

export function parseCreatedAt(value: unknown): Date | null {
  if (typeof value !== "string") return null;
  const match = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}(?:\.\d{1,3})?)$/.exec(value.trim());
  if (!match) return null;
  const at = new Date(`${match[1]}T${match[2]}Z`);
  return Number.isNaN(at.getTime()) ? null : at;
}

/** The applicant data Sumsub keeps under `fixedInfo`, from the case's `person` fields. */
export interface FixedInfo {
  firstName?: string;
  lastName?: string;
  dob?: string;
  nationality?: string;
  country?: string;
  phone?: string;
  addresses?: Array<Record<string, string>>;
  companyInfo?: Record<string, unknown>;
}
