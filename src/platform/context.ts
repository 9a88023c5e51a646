import type { Config } from "../config.js";
import type { BlobStore } from "./blobs/index.js";
import type { Db } from "./db/index.js";
import type { Logger } from "./logger.js";

/** What every service needs, built once per process and passed explicitly. */
export interface AppContext {
  readonly config: Config;
  readonly db: Db;
  readonly log: Logger;
  readonly blobs: BlobStore;
}

/** Who is acting: a partner's API key, an operator (analyst) or the workflow itself. */
export type Actor =
  | { kind: "apikey"; tenantId: string; keyId: string }
  | { kind: "analyst"; userId: string }
  | { kind: "node"; nodeId: string };

export function actorLabel(actor: Actor): string {
  switch (actor.kind) {
    case "apikey":
      return `apikey:${actor.keyId}`;
    case "analyst":
      return `analyst:${actor.userId}`;
    case "node":
      return `node:${actor.nodeId}`;
  }
}
