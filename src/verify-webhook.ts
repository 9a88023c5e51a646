import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * Verifies a webhook from the case decisioning service, for partners on Node.
 *
 * ```ts
 * import { verifyWebhook } from "case-decisioning-service/verify-webhook";
 *
 * // rawBody: the request body exactly as received (a Buffer or string), before any JSON parsing
 * if (!verifyWebhook({ body: rawBody, headers: req.headers, secrets: { "2025-01": process.env.WEBHOOK_SECRET! } })) {
 *   return res.status(401).end();
 * }
 * const event = JSON.parse(rawBody.toString("utf8"));
 * ```
 */
export const SIGNATURE_HEADER = "x-service-signature";
export const SECRET_ID_HEADER = "x-service-secret-id";

/**
 * The rotation set: a single secret; a map from secret id to secret; or a list of
 * `{id?, secret}`. Keep the outgoing secret in the set until the service signs with the new one.
 */
export type WebhookSecrets = string | Record<string, string> | ReadonlyArray<{ id?: string; secret: string }>;

/** Node's `req.headers`, a Fetch `Headers`, or any record of header names to values. */
export type WebhookHeaders =
  | { get(name: string): string | null }
  | Record<string, string | string[] | undefined>;

export interface VerifyWebhookInput {
  /** The raw request body: the exact bytes received, never a re-serialized object. */
  body: string | Uint8Array;
  headers: WebhookHeaders;
  secrets: WebhookSecrets;
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === "function") {
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  }
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value[0] : value;
}

function secretList(secrets: WebhookSecrets): Array<{ id?: string; secret: string }> {
  if (typeof secrets === "string") return [{ secret: secrets }];
  if (Array.isArray(secrets)) return [...secrets];
  return Object.entries(secrets as Record<string, string>).map(([id, secret]) => ({ id, secret }));
}

/** Hex HMAC-SHA256 of the body: the value of `X-Service-Signature`. */
export function signWebhookBody(secret: string, body: string | Uint8Array): string {
  return createHmac("sha256", secret).update(body).digest("hex");
}

function matches(signature: Buffer, secret: string, body: string | Uint8Array): boolean {
  const expected = Buffer.from(signWebhookBody(secret, body), "hex");
  return signature.length === expected.length && timingSafeEqual(signature, expected);
}

/**
 * True when `X-Service-Signature` is the HMAC-SHA256 of the raw body under one of the
 * secrets. When `X-Service-Secret-ID` names a secret of the set, that secret is tried first;
 * the comparison is constant-time.
 */
export function verifyWebhook(input: VerifyWebhookInput): boolean {
  if (typeof input.body !== "string" && !(input.body instanceof Uint8Array)) {
    throw new TypeError(
      "verifyWebhook needs the raw request body (a string or bytes exactly as received), not a parsed object",
    );
  }
  const signature = header(input.headers, SIGNATURE_HEADER)?.trim().toLowerCase();
  if (!signature || !/^[0-9a-f]{64}$/.test(signature)) return false;
  const presented = Buffer.from(signature, "hex");
  const secretId = header(input.headers, SECRET_ID_HEADER);
  const all = secretList(input.secrets);
  const ordered = [...all.filter((s) => s.id === secretId), ...all.filter((s) => s.id !== secretId)];
  return ordered.some((s) => matches(presented, s.secret, input.body));
}
