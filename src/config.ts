import path from "node:path";
import { parseSecretKey } from "./platform/secret-box.js";

/**
 * The service's configuration, read once from the environment at start and frozen.
 * Every variable is described here and nowhere else; a bad value stops the start with
 * a message naming the variable.
 */
export interface Config {
  readonly port: number;
  readonly host: string;
  /** `postgres://…` to use a PostgreSQL server; undefined for the embedded PGlite database. */
  readonly databaseUrl: string | undefined;
  readonly dataDir: string;
  /** The `{base_url}` used to build `callbackUrl` and `uploadUrl`, without a trailing slash. */
  readonly publicUrl: string;
  readonly env: "production" | "staging";
  /** Operator API bearer token. Undefined only in embedded mode before the first start resolves it. */
  readonly adminToken: string | undefined;
  /**
   * The key that seals stored credentials and webhook signing secrets (`CDS_SECRET_KEY`).
   * Undefined in embedded mode, where the key kept in the data directory is used.
   */
  readonly secretKey: string | undefined;
  readonly allowPrivateTargets: boolean;
  readonly role: "api" | "worker" | "all";
  readonly logLevel: "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
  readonly dbPoolSize: number;
  /** Statements run as prepared statements of their connection (PostgreSQL; decision 0030). */
  readonly dbPreparedStatements: boolean;
  readonly workerConcurrency: number;
  /** How long a claimed job is held before another worker may take it over. */
  readonly jobLeaseSeconds: number;
  /** Upper bound on how long an idle worker sleeps between queue checks when no notification wakes it. */
  readonly jobPollMs: number;
  /**
   * How long a new case waits for others to share its engine transaction while cases come at
   * least twice as often (decision 0031); 0 starts every case at once.
   */
  readonly startLingerMs: number;
  /** Runs of a new case that may end its process (begun, never finished) before the case is failed. */
  readonly caseCrashLimit: number;
  /** Wall-clock time one node's expressions, or one payload's input-schema validation, may take. */
  readonly evaluationDeadlineMs: number;
  /** Units the expressions of one node evaluation may spend (decision 0013). */
  readonly evaluationBudget: number;
  readonly evaluationNiceness: number;
  /** Webhook attempts in flight per process, on a worker of their own beside the general one. */
  readonly webhookConcurrency: number;
  /**
   * Webhook attempts in flight per process to one endpoint (a tenant's webhook configuration):
   * the floor of its lane, where a new or slow endpoint stays.
   */
  readonly webhookEndpointConcurrency: number;
  /** The most an endpoint's lane grows to while the endpoint answers quickly (decision 0007). */
  readonly webhookEndpointConcurrencyMax: number;
  /** How far ahead of the server clock an `eventTimestamp` may be. */
  readonly maxEventSkewSeconds: number;
  /** Lifetime of an upload slot. */
  readonly uploadTtlSeconds: number;
  /** Bearer token `/metrics` requires; undefined leaves it open. */
  readonly metricsToken: string | undefined;
  /** A worker-only process serves `/health`, `/ready` and `/metrics` on this port when set. */
  readonly metricsPort: number | undefined;
  /** Where uploaded documents are kept: files under `dataDir`, or an S3 bucket (`s3`). */
  readonly blobStore: "disk" | "s3";
  /** The bucket and how to reach it; present exactly when `blobStore` is `s3`. */
  readonly s3: S3Config | undefined;
}

/** An S3 bucket (AWS, or any S3-compatible server through `endpoint`). Credentials come from the AWS SDK's usual sources. */
export interface S3Config {
  readonly bucket: string;
  readonly region: string;
  /** An S3-compatible server's URL (MinIO, Ceph, …); undefined for AWS itself. */
  readonly endpoint: string | undefined;
  /** Path-style URLs (`{endpoint}/{bucket}/{key}`) rather than a bucket host name. */
  readonly forcePathStyle: boolean;
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
    this.name = "ConfigError";
  }
}

type Env = Record<string, string | undefined>;

interface VarSpec<T> {
  readonly name: string;
  readonly parse: (raw: string) => T;
}

function read<T>(env: Env, spec: VarSpec<T>, fallback: T): T {
  const raw = env[spec.name];
  if (raw === undefined || raw === "") return fallback;
  try {
    return spec.parse(raw);
  } catch (err) {
    throw new ConfigError(spec.name, (err as Error).message);
  }
}

function integer(min: number, max: number) {
  return (raw: string): number => {
    if (!/^\d+$/.test(raw)) throw new Error(`expected an integer, got "${raw}"`);
    const n = Number(raw);
    if (n < min || n > max) throw new Error(`expected an integer from ${min} to ${max}, got ${n}`);
    return n;
  };
}

function oneOf<T extends string>(...values: T[]) {
  return (raw: string): T => {
    if (!(values as string[]).includes(raw)) {
      throw new Error(`expected one of ${values.join(", ")}, got "${raw}"`);
    }
    return raw as T;
  };
}

function boolean(raw: string): boolean {
  if (["true", "1", "yes"].includes(raw.toLowerCase())) return true;
  if (["false", "0", "no"].includes(raw.toLowerCase())) return false;
  throw new Error(`expected true or false, got "${raw}"`);
}

function url(protocols: string[]) {
  return (raw: string): string => {
    let parsed: URL;
    try {
      parsed = new URL(raw);
    } catch {
      throw new Error("not a valid URL");
    }
    if (!protocols.includes(parsed.protocol)) {
      throw new Error(`expected a ${protocols.join(" or ")} URL`);
    }
    return raw.replace(/\/+$/, "");
  };
}

function nonEmpty(raw: string): string {
  return raw;
}

function token(raw: string): string {
  if (raw.length < 16) throw new Error("must be at least 16 characters");
  return raw;
}

/** A bucket name as S3 allows it: 3 to 63 lowercase letters, digits, dots and hyphens. */
function bucketName(raw: string): string {
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(raw)) {
    throw new Error(`"${raw}" is not a valid bucket name (3 to 63 lowercase letters, digits, dots, hyphens)`);
  }
  return raw;
}

function readS3(env: Env): S3Config {
  const bucket = read<string | undefined>(env, { name: "CDS_S3_BUCKET", parse: bucketName }, undefined);
  if (bucket === undefined) throw new ConfigError("CDS_S3_BUCKET", "is required when CDS_BLOB_STORE is s3");
  const endpoint = read<string | undefined>(
    env,
    { name: "CDS_S3_ENDPOINT", parse: url(["http:", "https:"]) },
    undefined,
  );
  const region = read<string | undefined>(
    env,
    { name: "CDS_S3_REGION", parse: nonEmpty },
    env.AWS_REGION || env.AWS_DEFAULT_REGION || (endpoint ? "us-east-1" : undefined),
  );
  if (region === undefined) {
    throw new ConfigError("CDS_S3_REGION", "is required for an AWS bucket (or set AWS_REGION)");
  }
  const forcePathStyle = read(env, { name: "CDS_S3_FORCE_PATH_STYLE", parse: boolean }, false);
  return { bucket, region, endpoint, forcePathStyle };
}

/**
 * The ceiling of an endpoint's lane: at least its floor (`CDS_WEBHOOK_ENDPOINT_CONCURRENCY`), and
 * no more than the worker's `CDS_WEBHOOK_CONCURRENCY` (a lane cannot use more). Unset, 64, or as
 * much of it as the worker has.
 */
function readEndpointCeiling(env: Env, floor: number, workerConcurrency: number): number {
  const spec = { name: "CDS_WEBHOOK_ENDPOINT_CONCURRENCY_MAX", parse: integer(1, 10000) };
  const ceiling = read<number | undefined>(env, spec, undefined);
  if (ceiling === undefined) return Math.max(floor, Math.min(64, workerConcurrency));
  if (ceiling < floor) {
    throw new ConfigError(
      spec.name,
      `must be at least CDS_WEBHOOK_ENDPOINT_CONCURRENCY (${floor}), the lane's floor; got ${ceiling}`,
    );
  }
  // A floor above the worker's concurrency is allowed (it bounds nothing); so is a ceiling equal to it.
  if (ceiling > floor && ceiling > workerConcurrency) {
    throw new ConfigError(
      spec.name,
      `must be at most CDS_WEBHOOK_CONCURRENCY (${workerConcurrency}), the attempts the worker has in flight; got ${ceiling}`,
    );
  }
  return ceiling;
}

export function loadConfig(env: Env = process.env): Config {
  const port = read(env, { name: "PORT", parse: integer(0, 65535) }, 8080);
  const host = read(env, { name: "HOST", parse: nonEmpty }, "127.0.0.1");
  const databaseUrl = read<string | undefined>(
    env,
    { name: "DATABASE_URL", parse: url(["postgres:", "postgresql:"]) },
    undefined,
  );
  const dataDir = path.resolve(read(env, { name: "CDS_DATA_DIR", parse: nonEmpty }, "./data"));
  const urlHost = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
  const publicUrl = read(
    env,
    { name: "CDS_PUBLIC_URL", parse: url(["http:", "https:"]) },
    `http://${urlHost.includes(":") ? `[${urlHost}]` : urlHost}:${port}`,
  );
  const cdsEnv = read(env, { name: "CDS_ENV", parse: oneOf("production", "staging") }, "staging");
  const adminToken = read<string | undefined>(env, { name: "CDS_ADMIN_TOKEN", parse: token }, undefined);
  if (databaseUrl !== undefined && adminToken === undefined) {
    throw new ConfigError("CDS_ADMIN_TOKEN", "is required when DATABASE_URL is set");
  }
  const secretKey = read<string | undefined>(
    env,
    {
      name: "CDS_SECRET_KEY",
      parse: (raw) => {
        parseSecretKey(raw);
        return raw.trim();
      },
    },
    undefined,
  );
  if (databaseUrl !== undefined && secretKey === undefined) {
    throw new ConfigError("CDS_SECRET_KEY", "is required when DATABASE_URL is set");
  }
  const allowPrivateTargets = read(
    env,
    { name: "CDS_ALLOW_PRIVATE_TARGETS", parse: boolean },
    cdsEnv !== "production",
  );
  const role = read(env, { name: "CDS_ROLE", parse: oneOf("api", "worker", "all") }, "all");
  const logLevel = read(
    env,
    { name: "CDS_LOG_LEVEL", parse: oneOf("fatal", "error", "warn", "info", "debug", "trace", "silent") },
    "info",
  );
  const blobStore = read(env, { name: "CDS_BLOB_STORE", parse: oneOf("disk", "s3") }, "disk");
  const webhookConcurrency = read(env, { name: "CDS_WEBHOOK_CONCURRENCY", parse: integer(1, 10000) }, 128);
  const webhookEndpointConcurrency = read(
    env,
    { name: "CDS_WEBHOOK_ENDPOINT_CONCURRENCY", parse: integer(1, 1000) },
    16,
  );
  const webhookEndpointConcurrencyMax = readEndpointCeiling(
    env,
    webhookEndpointConcurrency,
    webhookConcurrency,
  );
  const config: Config = {
    port,
    host,
    databaseUrl,
    dataDir,
    publicUrl,
    env: cdsEnv,
    adminToken,
    secretKey,
    allowPrivateTargets,
    role,
    logLevel,
    dbPoolSize: read(env, { name: "CDS_DB_POOL_SIZE", parse: integer(1, 1000) }, 10),
    dbPreparedStatements: read(env, { name: "CDS_DB_PREPARED_STATEMENTS", parse: boolean }, true),
    workerConcurrency: read(env, { name: "CDS_WORKER_CONCURRENCY", parse: integer(1, 10000) }, 32),
    jobLeaseSeconds: read(env, { name: "CDS_JOB_LEASE_SECONDS", parse: integer(1, 3600) }, 30),
    jobPollMs: read(env, { name: "CDS_JOB_POLL_MS", parse: integer(10, 60000) }, 1000),
    // On a server a commit is a WAL flush and a round trip; in the embedded database it is neither.
    startLingerMs: read(
      env,
      { name: "CDS_START_LINGER_MS", parse: integer(0, 1000) },
      databaseUrl === undefined ? 0 : SERVER_START_LINGER_MS,
    ),
    caseCrashLimit: read(env, { name: "CDS_CASE_CRASH_LIMIT", parse: integer(1, 100) }, 3),
    evaluationDeadlineMs: read(env, { name: "CDS_EVALUATION_DEADLINE_MS", parse: integer(10, 60000) }, 250),
    evaluationBudget: read(
      env,
      { name: "CDS_EVALUATION_BUDGET", parse: integer(1000, 1_000_000_000_000) },
      // EVALUATION_BUDGET of workflows/workflow.expressions.ts
      50_000,
    ),
    evaluationNiceness: read(
      env,
      { name: "CDS_EVALUATION_NICENESS", parse: integer(0, 19) },
      // EVALUATION_NICENESS of workflows/evaluation-threads.ts
      0,
    ),
    webhookConcurrency,
    webhookEndpointConcurrency,
    webhookEndpointConcurrencyMax,
    maxEventSkewSeconds: read(env, { name: "CDS_MAX_EVENT_SKEW_SECONDS", parse: integer(0, 86400) }, 300),
    uploadTtlSeconds: read(env, { name: "CDS_UPLOAD_TTL_SECONDS", parse: integer(10, 604800) }, 3600),
    metricsToken: read<string | undefined>(env, { name: "CDS_METRICS_TOKEN", parse: token }, undefined),
    metricsPort: read<number | undefined>(
      env,
      { name: "CDS_METRICS_PORT", parse: integer(0, 65535) },
      undefined,
    ),
    blobStore,
    s3: blobStore === "s3" ? readS3(env) : undefined,
  };
  return Object.freeze(config);
}

/** A configuration for tests and embedding: defaults with overrides, no environment read. */
/** `CDS_START_LINGER_MS` on PostgreSQL (decision 0031); the embedded database's is 0. */
export const SERVER_START_LINGER_MS = 5;

export function configWith(overrides: Partial<Config>): Config {
  return Object.freeze({ ...loadConfig({}), ...overrides });
}
