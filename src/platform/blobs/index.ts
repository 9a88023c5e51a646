import type { Config } from "../../config.js";
import { secretBoxOf } from "../secret-box.js";
import type { BlobStore } from "./blob-store.js";
import { DiskBlobStore } from "./disk-store.js";

export type { BlobInfo, BlobStore, PutTarget, UploadHeaders, UploadReceiver } from "./blob-store.js";

/** The configured store for uploaded documents. */
export function createBlobStore(config: Config): BlobStore {
  return new DiskBlobStore(config.dataDir, config.publicUrl, () => secretBoxOf(config));
}
