/** The header carrying the hex HMAC-SHA256 of the raw body. */
export declare const SIGNATURE_HEADER = "x-service-signature";
/** The header naming the secret that signed the delivery (absent when the one secret has no id). */
export declare const SECRET_ID_HEADER = "x-service-secret-id";

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

/**
 * True when `X-Service-Signature` is the HMAC-SHA256 of the raw body under one of the secrets
 * (the one `X-Service-Secret-ID` names first). Constant-time. Throws a `TypeError` when given a
 * parsed object instead of the raw body.
 */
export declare function verifyWebhook(input: VerifyWebhookInput): boolean;

/** Hex HMAC-SHA256 of the body: the value of `X-Service-Signature` (for your own tests). */
export declare function signWebhookBody(secret: string, body: string | Uint8Array): string;

/**
 * The key to deduplicate a verified, parsed event by: its `webhookId`, except for
 * `case.rfi_requested` and `case.rfi_answered`, which are keyed by (`event_type`, `rfi_id`)
 * because reminders and redeliveries of one request carry fresh webhookIds.
 */
export declare function dedupKey(event: { webhookId: string; event_type: string; rfi_id?: string }): string;
