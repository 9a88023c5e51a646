import fs from "node:fs";
import path from "node:path";

/**
 * PGlite keeps no lock on its directory: two processes opening it would each run a PostgreSQL
 * backend over the same files and corrupt them. This lock file, holding the owner's pid, makes
 * the second process fail at once. A lock left by a process that no longer exists (killed with
 * SIGKILL, say) is taken over.
 */
const heldHere = new Set<string>();

export class DataDirInUseError extends Error {
  constructor(dir: string, owner: string, lockFile: string) {
    super(
      `the embedded database in ${dir} is already in use by ${owner}. ` +
        "Stop that process, point CDS_DATA_DIR at another directory, or set DATABASE_URL to use PostgreSQL " +
        `(if no such process runs, delete ${lockFile}).`,
    );
    this.name = "DataDirInUseError";
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

export function lockDataDir(dir: string): () => void {
  const resolved = path.resolve(dir);
  const lockFile = path.join(resolved, "cds.lock");
  if (heldHere.has(resolved)) throw new DataDirInUseError(resolved, "this process", lockFile);
  fs.mkdirSync(resolved, { recursive: true });
  for (let attempt = 0; ; attempt++) {
    try {
      fs.writeFileSync(lockFile, String(process.pid), { flag: "wx" });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST" || attempt > 0) throw err;
      const owner = Number.parseInt(fs.readFileSync(lockFile, "utf8"), 10);
      if (Number.isInteger(owner) && owner !== process.pid && alive(owner)) {
        throw new DataDirInUseError(resolved, `process ${owner}`, lockFile);
      }
      fs.rmSync(lockFile, { force: true });
    }
  }
  heldHere.add(resolved);
  return () => {
    heldHere.delete(resolved);
    try {
      if (fs.readFileSync(lockFile, "utf8") === String(process.pid)) fs.rmSync(lockFile, { force: true });
    } catch {
      // already gone
    }
  };
}
