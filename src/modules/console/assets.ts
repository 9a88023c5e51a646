import { createHash } from "node:crypto";
import { SCRIPT } from "./assets/script.js";
import { STYLES } from "./assets/styles.js";

/** Changes whenever an asset does, so browsers may cache the assets for long. */
export const ASSET_VERSION = createHash("sha256").update(STYLES).update(SCRIPT).digest("hex").slice(0, 12);

export const ASSETS: Record<string, { type: string; body: string }> = {
  "console.css": { type: "text/css; charset=utf-8", body: STYLES },
  "console.js": { type: "text/javascript; charset=utf-8", body: SCRIPT },
};
