import { createHmac, timingSafeEqual } from "node:crypto";

export const SIGNATURE_HEADER = "x-service-signature";
export const SECRET_ID_HEADER = "x-service-secret-id";

/** The two events whose deliveries are deduplicated by (event_type, rfi_id) instead of webhookId. */
const RFI_EVENTS = new Set(["case.rfi_requested", "case.rfi_answered"]);

function header(headers, name) {
  if (headers && typeof headers.get === "function") return headers.get(name) ?? undefined;
  const key = Object.keys(headers ?? {}).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : headers[key];
  return Array.isArray(value) ? value[0] : value;
}

function secretList(secrets) {
  if (typeof secrets === "string") return [{ secret: secrets }];
  if (Array.isArray(secrets)) return [...secrets];
  return Object.entries(secrets).map(([id, secret]) => ({ id, secret }));
}

export function signWebhookBody(secret, body) {
  return createHmac("sha256", secret).update(body).digest("hex");
}

function matches(signature, secret, body) {
  const expected = Buffer.from(signWebhookBody(secret, body), "hex");
  return signature.length === expected.length && timingSafeEqual(signature, expected);
}

export function verifyWebhook(input) {
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
  // The secret the header names first, then the rest: a rotation in progress still verifies.
  const ordered = [...all.filter((s) => s.id === secretId), ...all.filter((s) => s.id !== secretId)];
  return ordered.some((s) => matches(presented, s.secret, input.body));
}

export function dedupKey(event) {
  if (!event || typeof event !== "object") throw new TypeError("dedupKey needs the parsed event object");
  if (RFI_EVENTS.has(event.event_type)) return `${event.event_type}:${event.rfi_id}`;
  return String(event.webhookId);
}
