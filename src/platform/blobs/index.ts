import type { Config } from "../../config.js";

/**
 * Storage for uploaded documents behind one small interface: the embedded implementation keeps
 * objects on the local disk under CDS_DATA_DIR and serves the signed upload URL itself; an S3
 * implementation would hand out presigned PUT URLs with the same headers signed.
 *
 * (The information-requests work fills this in: the interface below is the placeholder the
 * rest of the service is wired to.)
 */
export interface BlobStore {
  readonly kind: string;
}

export function createBlobStore(config: Config): BlobStore {
  return { kind: `disk:${config.dataDir}` };
}
