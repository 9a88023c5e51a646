import type { Config } from "../../config.js";
import { secretBoxOf } from "../secret-box.js";
import type { BlobStore } from "./blob-store.js";
import { DiskBlobStore } from "./disk-store.js";
import { S3BlobStore } from "./s3-store.js";

/** The store's interface, what it takes and what it gives (`blob-store.ts`). */
export type * from "./blob-store.js";

/** The configured store for uploaded documents: `CDS_BLOB_STORE` (decisions 0008 and 0022). */
export function createBlobStore(config: Config): BlobStore {
  if (config.blobStore === "s3" && config.s3) return new S3BlobStore(config.s3);
  return new DiskBlobStore(config.dataDir, config.publicUrl, () => secretBoxOf(config));
}
