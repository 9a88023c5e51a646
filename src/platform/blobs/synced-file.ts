import fs from "node:fs/promises";
import { Writable } from "node:stream";
import { AppError } from "../errors.js";

/** Data synced to disk while the upload is still arriving, so little is left to sync at the end. */
const SYNC_EVERY_BYTES = 512 * 1024;

/**
 * A new file (created exclusively) of at most `limit` bytes, durable once the stream finishes.
 * Rather than one `fsync` of the whole file after the last byte (the client waiting all the
 * while), it starts an `fdatasync` after every 512 KiB, which runs on the thread pool while later
 * bytes are received and written; the final `fsync` then has little left to do.
 */
export class SyncedFile extends Writable {
  #handle: fs.FileHandle | undefined;
  #unsynced = 0;
  /** The sync in flight, if any: one at a time per file, so uploads never crowd the thread pool. */
  #syncing: Promise<void> | undefined;
  #syncError: unknown;
  /** Bytes received so far. */
  received = 0;

  /** `limit`: the declared size; one byte more fails the stream with `invalid_request`. */
  constructor(
    private readonly file: string,
    private readonly limit: number,
  ) {
    super({ highWaterMark: 256 * 1024 });
  }

  override _construct(callback: (error?: Error | null) => void): void {
    fs.open(this.file, "wx").then(
      (handle) => {
        this.#handle = handle;
        callback();
      },
      (err: Error) => callback(err),
    );
  }

  override _writev(chunks: Array<{ chunk: Buffer }>, callback: (error?: Error | null) => void): void {
    const handle = this.#handle as fs.FileHandle;
    const buffers = chunks.map((c) => c.chunk);
    for (const b of buffers) this.received += b.length;
    if (this.received > this.limit) {
      callback(new AppError("invalid_request", `the body is longer than the declared ${this.limit} bytes`));
      return;
    }
    const total = buffers.reduce((sum, b) => sum + b.length, 0);
    handle.writev(buffers).then(
      (written) => {
        // A regular file takes every byte or fails (a full disk); anything else is not trusted.
        if (written.bytesWritten !== total) {
          callback(new Error(`short write: ${written.bytesWritten} of ${total} bytes`));
          return;
        }
        this.#unsynced += total;
        if (this.#unsynced >= SYNC_EVERY_BYTES && !this.#syncing) {
          this.#unsynced = 0;
          this.#syncing = handle
            .datasync()
            .catch((err: unknown) => {
              this.#syncError ??= err;
            })
            .finally(() => {
              this.#syncing = undefined;
            });
        }
        callback();
      },
      (err: Error) => callback(err),
    );
  }

  override _final(callback: (error?: Error | null) => void): void {
    const handle = this.#handle as fs.FileHandle;
    Promise.resolve(this.#syncing)
      .then(() => {
        // A failed sync is not retried: after one, a later fsync may report success falsely.
        if (this.#syncError) throw this.#syncError;
        return handle.sync();
      })
      .then(
        () => callback(),
        (err: Error) => callback(err),
      );
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    const closing = this.#handle
      ? Promise.resolve(this.#syncing).then(() => this.#handle?.close())
      : Promise.resolve();
    closing.then(
      () => callback(error),
      (err: Error) => callback(error ?? err),
    );
  }
}
