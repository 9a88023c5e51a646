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

/** Query strings can carry signatures (upload URLs); logs keep the path only. */
function pathOnly(url: string | undefined): string | undefined {
  if (!url) return url;
  const q = url.indexOf("?");
  return q === -1 ? url : `${url.slice(0, q)}?…`;
}

export function loggerOptions(level: string): pino.LoggerOptions {
  return {
    level,
    redact: { paths: REDACTED_PATHS, censor: "[redacted]" },
    serializers: {
      err: (err: unknown) => serializeError(err),
      req(req: { method?: string; url?: string; id?: string }) {
        return { method: req.method, url: pathOnly(req.url), reqId: req.id };
      },
    },
  };
}

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(loggerOptions(level), destination);
}

/** What code outside the HTTP layer needs of a logger; Fastify's and pino's both fit. */
export type Log = Pick<pino.BaseLogger, "fatal" | "error" | "warn" | "info" | "debug">;
