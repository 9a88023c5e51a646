import type { Readable } from "node:stream";
import type { Db } from "../db/index.js";

/**
 * Storage for uploaded documents behind one small interface. Clients never send a document
 * through the JSON API: they get a URL for one create-only `PUT` of exactly the declared object
 * (content type and byte length pinned, `If-None-Match: *` required) and send the bytes there.
 *
 * The embedded implementation keeps objects on the local disk under CDS_DATA_DIR and serves the
 * signed URL itself (`receiver`). The S3 implementation returns a presigned PUT URL with
 * `Content-Type`, `Content-Length` and `If-None-Match` among the signed headers, implements `stat`
 * with HEAD and `open` with GET, and has no `receiver`.
 *
 * A store that cannot be reached makes `stat`, `open` and `presignPut` throw `unavailable` (503).
 */
export interface BlobStore {
  readonly kind: "disk" | "s3";
  /** The origin upload URLs point at (the console's pages allow their browser to `PUT` there). */
  readonly uploadOrigin: string;
  /**
   * Whether the store can be used now: undefined when it can, else what is wrong and the
   * configuration variable most likely to blame (a missing bucket, refused credentials).
   */
  check(): Promise<BlobStoreProblem | undefined>;
  /**
   * A URL for one `PUT` of this object, valid until `target.expiresAt`. Call it outside any
   * transaction: a store may read its signing key from the database on first use.
   */
  presignPut(db: Db, target: PutTarget): Promise<string>;
  /** The stored object's size and content type, or undefined while it does not exist. */
  stat(key: string): Promise<BlobInfo | undefined>;
  /** The stored object as a stream, or undefined when it does not exist. */
  open(key: string): Promise<{ info: BlobInfo; stream: Readable } | undefined>;
  /** Present on stores whose upload URLs this service serves itself. */
  readonly receiver?: UploadReceiver;
}

/** One object a client may create, as pinned into its upload URL. */
export interface PutTarget {
  /** Unique per object: `[A-Za-z0-9_-]` segments separated by `/`. */
  key: string;
  contentType: string;
  sizeBytes: number;
  /** Whole seconds: URLs carry their expiry as a Unix time. */
  expiresAt: Date;
}

export interface BlobStoreProblem {
  /** The variable to look at: `CDS_S3_BUCKET`, `AWS_ACCESS_KEY_ID`, `CDS_S3_ENDPOINT`, … */
  variable: string;
  message: string;
}

export interface BlobInfo {
  sizeBytes: number;
  /** The `Content-Type` the object was stored with; null if it cannot be read back. */
  contentType: string | null;
  storedAt: Date;
  /**
   * The stored bytes' version tag where the store has one (S3's `ETag`), else null. A reader
   * compares it with the tag seen when the object was attached: an S3-compatible server that
   * ignores `If-None-Match` lets a second `PUT` replace an object, and the tag tells.
   */
  etag: string | null;
}

/** What the upload route needs of a store that receives its own uploads. */
export interface UploadReceiver {
  /** Path of the upload URLs under the service's base URL; the object key follows it. */
  readonly routePrefix: string;
  /**
   * Checks a `PUT` before a byte of its body is read: the signature over key, content type,
   * length and expiry, the three pinned headers, and that the object does not exist yet.
   * Throws `forbidden` (403) or `precondition_failed` (412).
   */
  authorize(db: Db, key: string, query: Record<string, unknown>, headers: UploadHeaders): Promise<PutTarget>;
  /**
   * Streams the body into the object, which becomes visible only once complete and synced.
   * Throws `invalid_request` (400) when the body's length differs from the declared size and
   * `precondition_failed` (412) when another upload created the object first.
   */
  receive(target: PutTarget, body: Readable): Promise<BlobInfo>;
}

export interface UploadHeaders {
  contentType: string | undefined;
  contentLength: string | undefined;
  ifNoneMatch: string | undefined;
  transferEncoding: string | undefined;
}

const KEY_PATTERN = /^[A-Za-z0-9_-]+(?:\/[A-Za-z0-9_-]+)*$/;

/** Whether `key` is a valid object key: `[A-Za-z0-9_-]` segments separated by `/`. */
export function isBlobKey(key: string): boolean {
  return KEY_PATTERN.test(key);
}

/** Throws on an invalid object key (a bug of the caller: keys are made by the service). */
export function checkKey(key: string): void {
  if (!isBlobKey(key)) throw new Error(`invalid blob key ${JSON.stringify(key)}`);
}
