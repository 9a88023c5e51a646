import { createHash } from "node:crypto";
import { SCRIPT } from "./assets/script.js";
import { STYLES } from "./assets/styles.js";

/** Changes whenever an asset does, so browsers may cache the assets for long. */
/** The console's icon: a shield with a check, in the console's blue. */
export const FAVICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><path d="M16 2 4 6v9c0 7.5 5.1 13.2 12 15 6.9-1.8 12-7.5 12-15V6z" fill="#1d4ed8"/><path d="m10 16 4 4 8-9" fill="none" stroke="#fff" stroke-width="3" stroke-linecap="round" stroke-linejoin="round"/></svg>`;

export const ASSET_VERSION = createHash("sha256")
  .update(STYLES)
  .update(SCRIPT)
  .update(FAVICON)
  .digest("hex")
  .slice(0, 12);

export const ASSETS: Record<string, { type: string; body: string }> = {
  "console.css": { type: "text/css; charset=utf-8", body: STYLES },
  "console.js": { type: "text/javascript; charset=utf-8", body: SCRIPT },
  "favicon.svg": { type: "image/svg+xml", body: FAVICON },
};
