import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll } from "vitest";
import { type Db, openDb } from "../../src/platform/db/index.js";
import { createServerDatabase, SERVER_URL } from "./db.js";

/** The database a crash test hands from one process to the next. */
export interface CrashTestDatabase {
  /** The embedded database's directory (empty while the suite runs on PostgreSQL). */
  readonly dataDir: string;
  /** A connection of this process. */
  open(): Promise<Db>;
  /** What a child process needs to open the same database. */
  env(): { DATABASE_URL: string; CDS_DATA_DIR: string };
}

/**
 * A database of the test file's own, made before its tests and removed after them: a database on
 * the PostgreSQL server when the suite runs there, else the embedded one in a fresh directory.
 */
export function crashTestDatabase(prefix: string): CrashTestDatabase {
  let dataDir = "";
  let serverDb: { url: string; drop(): Promise<void> } | undefined;
  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    if (SERVER_URL) serverDb = await createServerDatabase();
  });
  afterAll(async () => {
    await serverDb?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  return {
    get dataDir() {
      return dataDir;
    },
    open: () => openDb(serverDb ? { databaseUrl: serverDb.url } : { dataDir }),
    env: () => ({ DATABASE_URL: serverDb?.url ?? "", CDS_DATA_DIR: dataDir }),
  };
}
