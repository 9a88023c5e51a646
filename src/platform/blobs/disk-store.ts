import { createReadStream } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { uuid } from "../crypto.js";
import type { Db } from "../db/index.js";
import { AppError } from "../errors.js";
import type { SecretBox } from "../secret-box.js";
import type {
  BlobInfo,
  BlobStore,
  BlobStoreProblem,
  PutTarget,
  UploadHeaders,
  UploadReceiver,
} from "./blob-store.js";
import { checkKey, isBlobKey } from "./blob-store.js";
import { SyncedFile } from "./synced-file.js";
import { loadSigningKey, signatureMatches, signTarget } from "./upload-signature.js";

const ROUTE_PREFIX = "/uploads";
/** Leftovers of uploads cut short by a crash are swept once they are this old. */
const STALE_PART_MS = 24 * 3600 * 1000;

interface Sidecar {
  contentType: string;
  sizeBytes: number;
}

const forbidden = (message: string) => new AppError("forbidden", message);

/**
 * Objects on the local disk: `<dataDir>/blobs/objects/<key>` holds the bytes and
 * `<key>.meta.json` the content type they were stored with.
 *
 * An upload streams into a private temporary file, is synced, and only then is hard-linked to
 * its final name. `link` fails when the name exists, so of any number of concurrent uploads of
 * one object exactly one creates it, and a reader never sees a partial object: a name either
 * does not exist or points at complete, synced bytes.
 */
export class DiskBlobStore implements BlobStore, UploadReceiver {
  readonly kind = "disk" as const;
  readonly routePrefix = ROUTE_PREFIX;
  readonly receiver: UploadReceiver = this;
  readonly #objects: string;
  readonly #parts: string;
  #signingKey: Promise<Buffer> | undefined;
  #swept = false;

  constructor(
    dataDir: string,
    private readonly publicUrl: string,
    private readonly secretBox: () => SecretBox,
  ) {
    this.#objects = path.join(dataDir, "blobs", "objects");
    this.#parts = path.join(dataDir, "blobs", "parts");
  }

  get uploadOrigin(): string {
    return new URL(this.publicUrl).origin;
  }

  /** The data directory is checked by the start itself (the database and the secrets live there too). */
  async check(): Promise<BlobStoreProblem | undefined> {
    return undefined;
  }

  async presignPut(db: Db, target: PutTarget): Promise<string> {
    checkKey(target.key);
    const signature = signTarget(await this.#key(db), target);
    const query = new URLSearchParams({
      expires: String(Math.floor(target.expiresAt.getTime() / 1000)),
      contentType: target.contentType,
      contentLength: String(target.sizeBytes),
      signature,
    });
    return `${this.publicUrl}${ROUTE_PREFIX}/${target.key}?${query}`;
  }

  async stat(key: string): Promise<BlobInfo | undefined> {
    checkKey(key);
    const file = this.#path(key);
    let size: number;
    let storedAt: Date;
    try {
      const s = await fs.stat(file);
      size = s.size;
      storedAt = s.mtime;
    } catch (err) {
      if (isCode(err, "ENOENT")) return undefined;
      throw err;
    }
    let contentType: string | null = null;
    try {
      contentType = (JSON.parse(await fs.readFile(`${file}.meta.json`, "utf8")) as Sidecar).contentType;
    } catch (err) {
      if (!isCode(err, "ENOENT") && !(err instanceof SyntaxError)) throw err;
    }
    return { sizeBytes: size, contentType, storedAt, etag: null };
  }

  async open(key: string): Promise<{ info: BlobInfo; stream: Readable } | undefined> {
    const info = await this.stat(key);
    if (!info) return undefined;
    return { info, stream: createReadStream(this.#path(key)) };
  }

  async authorize(
    db: Db,
    key: string,
    query: Record<string, unknown>,
    headers: UploadHeaders,
  ): Promise<PutTarget> {
    const { expires, contentType, contentLength, signature } = query;
    if (
      !isBlobKey(key) ||
      typeof expires !== "string" ||
      !/^\d{1,12}$/.test(expires) ||
      typeof contentType !== "string" ||
      typeof contentLength !== "string" ||
      !/^\d{1,12}$/.test(contentLength) ||
      typeof signature !== "string"
    ) {
      throw forbidden("this is not a valid upload URL: use the uploadUrl exactly as it was returned");
    }
    const target: PutTarget = {
      key,
      contentType,
      sizeBytes: Number(contentLength),
      expiresAt: new Date(Number(expires) * 1000),
    };
    if (!signatureMatches(await this.#key(db), target, signature)) {
      throw forbidden(
        "the upload URL's signature does not match: use the uploadUrl exactly as it was returned",
      );
    }
    if (target.expiresAt.getTime() <= Date.now()) {
      throw forbidden(`the upload URL expired at ${target.expiresAt.toISOString()}; mint a new upload slot`);
    }
    if (headers.contentType !== target.contentType) {
      throw forbidden(`Content-Type must be exactly ${target.contentType}, as declared for this upload`);
    }
    if (headers.transferEncoding !== undefined || headers.contentLength !== String(target.sizeBytes)) {
      throw forbidden(
        `Content-Length must be exactly ${target.sizeBytes}, as declared for this upload (no chunked encoding)`,
      );
    }
    if (headers.ifNoneMatch?.trim() !== "*") {
      throw forbidden("send If-None-Match: * (an upload creates its object once and never replaces it)");
    }
    if (await this.stat(key)) throw alreadyStored();
    return target;
  }

  async receive(target: PutTarget, body: Readable): Promise<BlobInfo> {
    const final = this.#path(target.key);
    await fs.mkdir(this.#parts, { recursive: true });
    await fs.mkdir(path.dirname(final), { recursive: true });
    await this.#sweepOnce();
    const part = path.join(this.#parts, `${uuid()}.part`);
    const sidecarPart = `${part}.meta`;
    const sidecar: Sidecar = { contentType: target.contentType, sizeBytes: target.sizeBytes };
    // Written and synced while the body streams in; moved into place only with a complete object.
    const sidecarWritten = fs.writeFile(sidecarPart, JSON.stringify(sidecar), { flag: "wx", flush: true });
    sidecarWritten.catch(() => {});
    try {
      const file = new SyncedFile(part, target.sizeBytes);
      try {
        await pipeline(body, file);
      } catch (err) {
        // The client went away mid-body: nobody is left to answer, and nothing is kept.
        if (isCode(err, "ECONNRESET") || isCode(err, "ERR_STREAM_PREMATURE_CLOSE")) {
          throw new UploadAborted(err);
        }
        throw err;
      }
      if (file.received !== target.sizeBytes) throw lengthMismatch(target, file.received);
      await sidecarWritten;
      await fs.rename(sidecarPart, `${final}.meta.json`);
      try {
        await fs.link(part, final);
      } catch (err) {
        if (isCode(err, "EEXIST")) throw alreadyStored();
        throw err;
      }
      await syncDirectory(path.dirname(final));
      const stored = await fs.stat(final);
      return { sizeBytes: stored.size, contentType: target.contentType, storedAt: stored.mtime, etag: null };
    } finally {
      await sidecarWritten.catch(() => {});
      await fs.rm(part, { force: true });
      await fs.rm(sidecarPart, { force: true });
    }
  }

  #path(key: string): string {
    return path.join(this.#objects, ...key.split("/"));
  }

  #key(db: Db): Promise<Buffer> {
    if (!this.#signingKey) {
      this.#signingKey = loadSigningKey(db, this.secretBox());
      this.#signingKey.catch(() => {
        this.#signingKey = undefined;
      });
    }
    return this.#signingKey;
  }

  async #sweepOnce(): Promise<void> {
    if (this.#swept) return;
    this.#swept = true;
    const cutoff = Date.now() - STALE_PART_MS;
    for (const name of await fs.readdir(this.#parts)) {
      const file = path.join(this.#parts, name);
      const s = await fs.stat(file).catch(() => undefined);
      if (s && s.mtimeMs < cutoff) await fs.rm(file, { force: true });
    }
  }
}

/** The request body ended early because the connection closed. */
export class UploadAborted extends Error {
  constructor(cause: unknown) {
    super("the upload was aborted before its last byte", { cause });
    this.name = "UploadAborted";
  }
}

function alreadyStored(): AppError {
  return new AppError(
    "precondition_failed",
    "this upload slot already holds its object; an upload cannot be replaced (mint a new slot)",
  );
}

function lengthMismatch(target: PutTarget, received: number): AppError {
  return new AppError(
    "invalid_request",
    `the body has ${received} bytes but ${target.sizeBytes} were declared; nothing was stored`,
  );
}

function isCode(err: unknown, code: string): boolean {
  return (err as { code?: string } | null)?.code === code;
}

/** Makes the new name durable; platforms that cannot sync a directory skip it. */
async function syncDirectory(dir: string): Promise<void> {
  let handle: fs.FileHandle | undefined;
  try {
    handle = await fs.open(dir, "r");
    await handle.sync();
  } catch {
    // Directory handles cannot be synced everywhere (Windows); the data itself is synced.
  } finally {
    await handle?.close().catch(() => {});
  }
}
