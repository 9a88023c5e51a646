import type { Readable } from "node:stream";
import {
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import type { S3Config } from "../../config.js";
import type { Db } from "../db/index.js";
import { AppError } from "../errors.js";
import {
  type BlobInfo,
  type BlobStore,
  type BlobStoreProblem,
  checkKey,
  type PutTarget,
} from "./blob-store.js";

/** The headers a presigned PUT signs besides `host`: the object is exactly the declared one, created once. */
const PINNED_HEADERS = new Set(["content-type", "content-length", "if-none-match"]);
/** How long a known state of the bucket is trusted before minting asks again. */
const CHECK_FRESH_MS = 2000;

/**
 * Objects in an S3 bucket (AWS, or any S3-compatible server through `endpoint`). The client
 * `PUT`s the bytes to a presigned URL straight to the bucket: this service never sees them.
 *
 * The URL signs `Content-Type`, `Content-Length` and `If-None-Match: *` (S3 answers 412 when the
 * object exists), and expires with the slot. S3 makes an object visible only once its last byte
 * is stored, so an interrupted upload leaves nothing; one whose length differs from the signed
 * `Content-Length` is refused by S3. The services check the stored size and type again before an
 * answer attaches it, and never attach a slot twice, on any S3-compatible server, including one
 * that ignores `If-None-Match`.
 *
 * Credentials come from the AWS SDK's usual sources (environment, shared files, the instance's
 * or the pod's role); the service keeps none.
 */
export class S3BlobStore implements BlobStore {
  readonly kind = "s3" as const;
  readonly #client: S3Client;
  readonly #bucket: string;
  readonly #origin: string;
  #lastCheck: { at: number; problem: Promise<BlobStoreProblem | undefined> } | undefined;

  constructor(config: S3Config) {
    this.#bucket = config.bucket;
    this.#client = new S3Client({
      region: config.region,
      ...(config.endpoint ? { endpoint: config.endpoint } : {}),
      forcePathStyle: config.forcePathStyle,
      // A checksum in a presigned URL would be the empty body's: no upload could match it.
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
      requestHandler: { connectionTimeout: 5000, requestTimeout: 30_000 },
    });
    this.#origin = config.endpoint
      ? config.forcePathStyle
        ? new URL(config.endpoint).origin
        : virtualHostOrigin(config.endpoint, config.bucket)
      : `https://${config.bucket}.s3.${config.region}.amazonaws.com`;
  }

  get uploadOrigin(): string {
    return this.#origin;
  }

  async check(): Promise<BlobStoreProblem | undefined> {
    const problem = this.#client.send(new HeadBucketCommand({ Bucket: this.#bucket })).then(
      () => undefined,
      (err: unknown) => describeProblem(err, this.#bucket),
    );
    this.#lastCheck = { at: Date.now(), problem };
    return problem;
  }

  async presignPut(_db: Db, target: PutTarget): Promise<string> {
    checkKey(target.key);
    const problem = await this.#recentCheck();
    if (problem) throw unavailable(problem.message);
    // Signed now for exactly the time left, so that the URL expires with the slot, to the second.
    const signingDate = new Date(Math.floor(Date.now() / 1000) * 1000);
    const expiresIn = Math.max(1, Math.round((target.expiresAt.getTime() - signingDate.getTime()) / 1000));
    const command = new PutObjectCommand({
      Bucket: this.#bucket,
      Key: target.key,
      ContentType: target.contentType,
      ContentLength: target.sizeBytes,
      IfNoneMatch: "*",
    });
    try {
      return await getSignedUrl(this.#client, command, {
        expiresIn,
        signingDate,
        signableHeaders: PINNED_HEADERS,
      });
    } catch (err) {
      throw unavailable(describeProblem(err, this.#bucket).message, err);
    }
  }

  async stat(key: string): Promise<BlobInfo | undefined> {
    checkKey(key);
    try {
      const head = await this.#client.send(new HeadObjectCommand({ Bucket: this.#bucket, Key: key }));
      return infoOf(head);
    } catch (err) {
      // A HEAD's 404 has no body to tell a missing object from a missing bucket: ask the bucket.
      if (isNotFound(err)) {
        const problem = await this.#recentCheck();
        if (problem) throw unavailable(problem.message, err);
        return undefined;
      }
      throw unavailable(describeProblem(err, this.#bucket).message, err);
    }
  }

  async open(key: string): Promise<{ info: BlobInfo; stream: Readable } | undefined> {
    checkKey(key);
    try {
      const got = await this.#client.send(new GetObjectCommand({ Bucket: this.#bucket, Key: key }));
      return { info: infoOf(got), stream: got.Body as Readable };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw unavailable(describeProblem(err, this.#bucket).message, err);
    }
  }

  /** The bucket's state as last seen, asked again when older than a couple of seconds. */
  #recentCheck(): Promise<BlobStoreProblem | undefined> {
    if (this.#lastCheck && Date.now() - this.#lastCheck.at < CHECK_FRESH_MS) return this.#lastCheck.problem;
    return this.check();
  }
}

function infoOf(head: {
  ContentLength?: number;
  ContentType?: string;
  LastModified?: Date;
  ETag?: string;
}): BlobInfo {
  return {
    sizeBytes: head.ContentLength ?? 0,
    contentType: head.ContentType ?? null,
    storedAt: head.LastModified ?? new Date(0),
    etag: head.ETag ?? null,
  };
}

function virtualHostOrigin(endpoint: string, bucket: string): string {
  const url = new URL(endpoint);
  url.hostname = `${bucket}.${url.hostname}`;
  return url.origin;
}

function unavailable(message: string, cause?: unknown): AppError {
  return new AppError("unavailable", `document storage is unavailable: ${message}`, {
    headers: { "retry-after": "5" },
    ...(cause === undefined ? {} : { cause }),
  });
}

function statusOf(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
}

/** No such object (a missing bucket answers 404 too, but names itself in a GET's body). */
function isNotFound(err: unknown): boolean {
  return statusOf(err) === 404 && !(err instanceof S3ServiceException && err.name === "NoSuchBucket");
}

/** What went wrong reaching the bucket, in words an operator acts on, and the variable to look at. */
export function describeProblem(err: unknown, bucket: string): BlobStoreProblem {
  const name = (err as Error | null)?.name ?? "";
  const status = statusOf(err);
  if (name === "CredentialsProviderError" || /credential/i.test((err as Error | null)?.message ?? "")) {
    return {
      variable: "AWS_ACCESS_KEY_ID",
      message: "no AWS credentials were found (environment, shared files or a role)",
    };
  }
  if (status === 404 || name === "NoSuchBucket") {
    return { variable: "CDS_S3_BUCKET", message: `the bucket "${bucket}" does not exist` };
  }
  if (status === 401 || status === 403) {
    return {
      variable: "AWS_ACCESS_KEY_ID",
      message: `the bucket "${bucket}" refused the credentials (${name || `HTTP ${status}`})`,
    };
  }
  if (
    status === 301 ||
    status === 400 ||
    name === "PermanentRedirect" ||
    name === "AuthorizationHeaderMalformed"
  ) {
    return {
      variable: "CDS_S3_REGION",
      message: `the bucket "${bucket}" answered ${status ?? name}: is it in another region?`,
    };
  }
  if (status !== undefined) {
    return { variable: "CDS_S3_BUCKET", message: `the bucket "${bucket}" answered HTTP ${status} (${name})` };
  }
  const code = (err as { code?: string } | null)?.code;
  return {
    variable: "CDS_S3_ENDPOINT",
    message: `the S3 endpoint cannot be reached (${code ?? name ?? "network error"})`,
  };
}
