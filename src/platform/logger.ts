import pino from "pino";

export type Logger = pino.Logger;

/**
 * Paths that are never written to a log: key values, bearer tokens, webhook secrets, and the
 * personal data of information requests (recipients, texts and answers).
 */
export const REDACTED_PATHS = [
  "req.headers.authorization",
  'req.headers["x-api-key"]',
  "*.key",
  "*.secret",
  "*.secrets",
  "*.token",
  "*.to",
  "*.cc",
  "*.subject",
  "*.body",
  "*.fields",
  "*.value",
  // Case documents and customer data, wherever a log call might carry them.
  "*.payload",
  "*.metadata",
  "*.person",
  "*.business",
  "*.attributes",
  "*.reason",
  "*.label",
  "*.email",
  "*.phone",
  "*.firstName",
  "*.lastName",
  "*.dateOfBirth",
  "*.params",
  "*.credentials",
];

/**
 * What an error may say in a log. Database errors carry the data that failed in `where`
 * (`JSON data, line 1: {…`), `detail` (`Key (email)=(…)`) and quoted values in the message
 * (`invalid input syntax for type uuid: "…"`); errors of our own may quote values too. So only
 * these properties are kept, and every double-quoted segment of a message or stack is replaced.
 */
const KEPT_ERROR_FIELDS = ["code", "severity", "routine", "table", "column", "constraint", "status"] as const;

function scrub(text: string): string {
  return text.replace(/"(?:[^"\\\n]|\\.)*"/g, '"…"');
}

export function serializeError(err: unknown, depth = 0): Record<string, unknown> {
  if (!(err instanceof Error)) return { type: typeof err, message: "a non-Error value was thrown" };
  const out: Record<string, unknown> = {
    type: err.name,
    message: scrub(err.message),
  };
  if (err.stack) out.stack = scrub(err.stack);
  const fields = err as unknown as Record<string, unknown>;
  for (const key of KEPT_ERROR_FIELDS) {
    const value = fields[key];
    if (typeof value === "string" || typeof value === "number") out[key] = value;
  }
  if (err.cause !== undefined && depth < 3) out.cause = serializeError(err.cause, depth + 1);
  return out;
}

/**
 * Path segments that are secrets in themselves, each kept as `…` in a logged path: a callback's
 * ref (`/cases/{id}/callbacks/{ref}`), a paused node's handle (`/pending/{handle}/…`), and a
 * vendor webhook's token (`/providers/{broker}/webhooks/{token}`).
 */
const SECRET_SEGMENTS: readonly RegExp[] = [
  /(\/callbacks\/)[^/]+/gi,
  /(\/pending\/)[^/]+/gi,
  /(\/providers\/[^/]+\/webhooks\/)[^/]+/gi,
];

/**
 * A URL as logs show it: the path only (query strings can carry signatures, as upload URLs do),
 * with its secret segments hidden.
 */
export function loggedPath(url: string | undefined): string | undefined {
  if (!url) return url;
  const q = url.indexOf("?");
  let path = q === -1 ? url : url.slice(0, q);
  for (const segment of SECRET_SEGMENTS) path = path.replace(segment, "$1…");
  return q === -1 ? path : `${path}?…`;
}

export function loggerOptions(level: string): pino.LoggerOptions {
  return {
    level,
    redact: { paths: REDACTED_PATHS, censor: "[redacted]" },
    serializers: {
      err: (err: unknown) => serializeError(err),
      req(req: { method?: string; url?: string; id?: string }) {
        return { method: req.method, url: loggedPath(req.url), reqId: req.id };
      },
    },
  };
}

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(loggerOptions(level), destination);
}

/** What code outside the HTTP layer needs of a logger; Fastify's and pino's both fit. */
export type Log = Pick<pino.BaseLogger, "fatal" | "error" | "warn" | "info" | "debug">;
