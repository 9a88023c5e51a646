import fs from "node:fs";
import path from "node:path";
import { randomBase62 } from "./crypto.js";

export function adminTokenFile(dataDir: string): string {
  return path.join(dataDir, "admin-token");
}

export function readStoredAdminToken(dataDir: string): string | undefined {
  try {
    return fs.readFileSync(adminTokenFile(dataDir), "utf8").trim() || undefined;
  } catch {
    return undefined;
  }
}

/**
 * The embedded mode's operator token: the one kept in the data directory, or a new one written
 * there (readable by the owner only). `created` tells the caller to show it, this once.
 */
export function ensureStoredAdminToken(dataDir: string): { token: string; created: boolean; file: string } {
  const file = adminTokenFile(dataDir);
  const existing = readStoredAdminToken(dataDir);
  if (existing) return { token: existing, created: false, file };
  fs.mkdirSync(dataDir, { recursive: true });
  const token = `cds_admin_${randomBase62(40)}`;
  fs.writeFileSync(file, `${token}\n`, { mode: 0o600 });
  return { token, created: true, file };
}
