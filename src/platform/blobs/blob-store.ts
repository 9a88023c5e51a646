import type { Readable } from "node:stream";
import type { Db } from "../db/index.js";

/**
 * Storage for uploaded documents behind one small interface. Clients never send a document
 * through the JSON API: they get a URL for one create-only `PUT` of exactly the declared object
 * (content type and byte length pinned, `If-None-Match: *` required) and send the bytes there.
 *
 * The embedded implementation keeps objects on the local disk under CDS_DATA_DIR and serves the
 * signed URL itself (`receiver`). An S3 implementation would return a presigned PUT URL with
 * `Content-Type`, `Content-Length` and `If-None-Match` among the signed headers, implement `stat`
 * with HEAD and `open` with GET, and have no `receiver`.
 */
export interface BlobStore {
  readonly kind: "disk";
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

export interface BlobInfo {
  sizeBytes: number;
  /** The `Content-Type` the object was stored with; null if it cannot be read back. */
  contentType: string | null;
  storedAt: Date;
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
