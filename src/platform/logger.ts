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
];

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
