import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { sql } from "kysely";
import type { Db } from "./db/index.js";

/** `migrations/` at the project root, from both `src/platform` and `dist/platform`. */
export const MIGRATIONS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../migrations");

/** An arbitrary constant shared by every process of the service: one migrator at a time. */
const MIGRATION_LOCK = 727_001;

export interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

export interface MigrationReport {
  applied: Array<{ version: number; name: string }>;
  alreadyApplied: number;
}

/**
 * The numbered migrations of one or more folders (the platform's `migrations/` and each
 * feature's), in one sequence: versions are numbered across all folders and never repeat.
 */
export function readMigrations(dirs: string | readonly string[] = MIGRATIONS_DIR): Migration[] {
  const migrations = (typeof dirs === "string" ? [dirs] : dirs).flatMap((dir) =>
    fs
      .readdirSync(dir)
      .filter((f) => f.endsWith(".sql"))
      .map((file) => {
        const match = /^(\d{4})_([a-z0-9_]+)\.sql$/.exec(file);
        if (!match) throw new Error(`migration file name ${file} is not NNNN_name.sql`);
        const text = fs.readFileSync(path.join(dir, file), "utf8");
        return {
          version: Number(match[1]),
          name: match[2] as string,
          sql: text,
          checksum: createHash("sha256").update(text).digest("hex"),
        };
      }),
  );
  migrations.sort((a, b) => a.version - b.version);
  migrations.forEach((m, i) => {
    const previous = migrations[i - 1];
    if (previous && previous.version === m.version) {
      throw new Error(`two migrations are numbered ${m.version}: ${previous.name} and ${m.name}`);
    }
  });
  return migrations;
}

/** A feature's migrations folder, `migrations/<name>/` (which not every feature has). */
export function featureMigrationsDir(name: string): string {
  return path.join(MIGRATIONS_DIR, name);
}

/** The migrations folders of these features, those that have one, in their order. */
export function featureMigrationsDirs(names: readonly string[]): string[] {
  return names.map(featureMigrationsDir).filter((dir) => fs.existsSync(dir));
}

/**
 * Applies every migration not yet recorded, in order, each in its own transaction with its
 * record. Forward-only: a recorded migration whose file has changed stops the run.
 */
export async function migrate(db: Db, migrations: readonly Migration[]): Promise<MigrationReport> {
  return db.root.connection().execute(async (conn) => {
    await sql`SELECT pg_advisory_lock(${MIGRATION_LOCK})`.execute(conn);
    try {
      await sql`
        CREATE TABLE IF NOT EXISTS schema_migrations (
          version     integer PRIMARY KEY,
          name        text NOT NULL,
          checksum    text NOT NULL,
          applied_at  timestamptz NOT NULL DEFAULT now()
        )`.execute(conn);
      const recorded = await conn.selectFrom("schema_migrations").selectAll().execute();
      const byVersion = new Map(recorded.map((r) => [r.version, r]));
      for (const r of recorded) {
        const m = migrations.find((x) => x.version === r.version);
        if (!m)
          throw new Error(
            `the database has migration ${r.version} (${r.name}), which this build does not know`,
          );
        if (m.checksum !== r.checksum) {
          throw new Error(`migration ${r.version} (${r.name}) was changed after it was applied`);
        }
      }
      const applied: MigrationReport["applied"] = [];
      for (const m of migrations) {
        if (byVersion.has(m.version)) continue;
        await conn.transaction().execute(async (tx) => {
          await sql.raw(m.sql).execute(tx);
          await tx
            .insertInto("schema_migrations")
            .values({ version: m.version, name: m.name, checksum: m.checksum })
            .execute();
        });
        applied.push({ version: m.version, name: m.name });
      }
      return { applied, alreadyApplied: recorded.length };
    } finally {
      await sql`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`.execute(conn);
    }
  });
}
