import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { serviceMigrations } from "../src/context.js";
import { featureModules } from "../src/modules/index.js";
import { featureMigrationsDir, featureMigrationsDirs } from "../src/platform/migrate.js";

/**
 * The module boundaries of decision 0020, checked on the code itself: the lint rules catch what
 * they must, each table has one owner, and a module's SQL writes only the tables it owns.
 */

const ROOT = path.resolve(import.meta.dirname, "..");
const run = promisify(execFile);

/** The tables the platform itself owns (its queue, secrets, migrations, heartbeats). */
const PLATFORM_TABLES = ["jobs", "service_secrets", "schema_migrations", "worker_heartbeats"];

/**
 * Writes into a table another module owns that are still there, each with its reason. The list
 * only shrinks: an entry that no longer matches any write fails the test.
 */
const KNOWN_FOREIGN_WRITES: Array<{ module: string; table: string; why: string }> = [];

describe("the lint rules of the module boundaries", () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  /** Runs dependency-cruiser with the project's rules over a small tree of files. */
  async function cruise(files: Record<string, string>): Promise<{ ok: boolean; output: string }> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cds-boundaries-"));
    dirs.push(dir);
    const tsconfig = { compilerOptions: { module: "NodeNext", moduleResolution: "NodeNext", strict: true } };
    fs.writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify(tsconfig));
    for (const [file, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      fs.writeFileSync(path.join(dir, file), text);
    }
    const bin = path.join(ROOT, "node_modules/dependency-cruiser/bin/dependency-cruise.mjs");
    const config = path.join(ROOT, ".dependency-cruiser.cjs");
    try {
      const { stdout } = await run(
        process.execPath,
        [bin, "src", "--config", config, "--output-type", "err"],
        {
          cwd: dir,
        },
      );
      return { ok: true, output: stdout };
    } catch (err) {
      const { stdout = "", stderr = "" } = err as { stdout?: string; stderr?: string };
      return { ok: false, output: `${stdout}${stderr}` };
    }
  }

  const twoModules = {
    "src/modules/a/index.ts": 'export { x } from "./x.js";\n',
    "src/modules/a/x.ts": "export const x = 1;\n",
    "src/modules/b/index.ts": 'import { x } from "../a/index.js";\nexport const y = x;\n',
    "src/platform/p.ts": "export const p = 1;\n",
  };

  it("pass a module that imports another through its index.ts", async () => {
    const result = await cruise(twoModules);
    expect(result.output).toContain("no dependency violations found");
    expect(result.ok).toBe(true);
  });

  it("refuse a deep import into another module", async () => {
    const result = await cruise({
      ...twoModules,
      "src/modules/b/deep.ts": 'import { x } from "../a/x.js";\nexport const z = x;\n',
    });
    expect(result.ok).toBe(false);
    expect(result.output).toContain("module-door: src/modules/b/deep.ts → src/modules/a/x.ts");
  });

  it("refuse an import circle, even inside one folder", async () => {
    const result = await cruise({
      ...twoModules,
      "src/modules/a/one.ts": 'import { two } from "./two.js";\nexport const one = () => two;\n',
      "src/modules/a/two.ts": 'import { one } from "./one.js";\nexport const two = () => one;\n',
    });
    expect(result.ok).toBe(false);
    expect(result.output).toContain("no-circular");
  });

  it("refuse an import of a module by the platform", async () => {
    const result = await cruise({
      ...twoModules,
      "src/platform/p.ts": 'import { x } from "../modules/a/index.js";\nexport const p = x;\n',
    });
    expect(result.ok).toBe(false);
    expect(result.output).toContain("platform-imports-no-module: src/platform/p.ts → src/modules/a/index.ts");
  });
});

function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return filesUnder(full);
    return /\.tsx?$/.test(entry.name) ? [full] : [];
  });
}

/** The tables named by the writes (Kysely builders and raw SQL) of the TypeScript files under a folder. */
function writesUnder(dir: string, tables: Set<string>): Array<{ file: string; table: string }> {
  const writes: Array<{ file: string; table: string }> = [];
  const builder = /\.(?:insertInto|updateTable|deleteFrom|mergeInto)\(\s*"(\w+)"/g;
  const raw = /\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM|MERGE\s+INTO)\s+(\w+)/g;
  for (const file of filesUnder(dir)) {
    const text = fs.readFileSync(file, "utf8");
    for (const m of text.matchAll(builder)) writes.push({ file, table: m[1] as string });
    for (const m of text.matchAll(raw)) {
      if (tables.has(m[1] as string)) writes.push({ file, table: m[1] as string });
    }
  }
  return writes;
}

describe("the tables", () => {
  // A table renamed keeps its owner under both names (the old one may name a view since).
  const created = new Set(
    serviceMigrations()
      .flatMap((m) => [
        ...m.sql.matchAll(/CREATE TABLE (?:IF NOT EXISTS )?(\w+)/g),
        ...m.sql.matchAll(/ALTER TABLE \w+ RENAME TO (\w+)/g),
      ])
      .map((m) => m[1] as string),
  );
  // The migration runner makes its own table before it applies any migration.
  created.add("schema_migrations");
  const owners = new Map<string, string[]>();
  for (const table of PLATFORM_TABLES) owners.set(table, ["platform"]);
  for (const module of featureModules) {
    for (const table of module.tables ?? []) owners.set(table, [...(owners.get(table) ?? []), module.name]);
  }

  it("each have exactly one owner: the platform or one feature", () => {
    expect([...created].sort()).toEqual([...owners.keys()].sort());
    for (const [table, who] of owners) expect(who, table).toHaveLength(1);
  });

  it("are written only by the module that owns them", () => {
    const foreign: Array<{ module: string; table: string; file: string }> = [];
    const modules = [
      { name: "platform", dir: path.join(ROOT, "src/platform"), tables: PLATFORM_TABLES },
      ...featureModules.map((m) => ({
        name: m.name,
        dir: path.join(ROOT, "src/modules", m.name),
        tables: m.tables ?? [],
      })),
    ];
    for (const module of modules) {
      for (const write of writesUnder(module.dir, created)) {
        if (!module.tables.includes(write.table))
          foreign.push({ module: module.name, table: write.table, file: path.relative(ROOT, write.file) });
      }
    }
    const unexplained = foreign.filter(
      (w) => !KNOWN_FOREIGN_WRITES.some((k) => k.module === w.module && k.table === w.table),
    );
    expect(unexplained).toEqual([]);
    for (const known of KNOWN_FOREIGN_WRITES) {
      expect(
        foreign.some((w) => w.module === known.module && w.table === known.table),
        `${known.module} no longer writes ${known.table}: remove it from KNOWN_FOREIGN_WRITES`,
      ).toBe(true);
    }
  });

  it("are created and changed by their owner's migrations, each folder of migrations/ a feature's", () => {
    const folders = fs
      .readdirSync(path.join(ROOT, "migrations"), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
    // A feature's folder is named after it, so a folder named after no feature would never be read.
    const read = featureMigrationsDirs(featureModules.map((m) => m.name)).map((dir) => path.basename(dir));
    expect(read.sort()).toEqual(folders.sort());
    const touches =
      /(?:CREATE TABLE(?: IF NOT EXISTS)?|ALTER TABLE(?: IF EXISTS)?|CREATE (?:UNIQUE )?INDEX(?: CONCURRENTLY)?(?: IF NOT EXISTS)? \w+ ON)\s+(\w+)/g;
    const strays: string[] = [];
    for (const module of featureModules) {
      const dir = featureMigrationsDir(module.name);
      if (!fs.existsSync(dir)) continue;
      for (const file of fs.readdirSync(dir)) {
        const text = fs.readFileSync(path.join(dir, file), "utf8");
        for (const m of text.matchAll(touches)) {
          if (!(module.tables ?? []).includes(m[1] as string)) strays.push(`${module.name}: ${file} ${m[1]}`);
        }
      }
    }
    expect(strays).toEqual([]);
    // The check sees what it looks for: the webhooks module's folder creates its deliveries.
    const webhooks = fs.readdirSync(featureMigrationsDir("webhooks"));
    expect(
      webhooks.some((f) =>
        /CREATE TABLE webhook_deliveries/.test(
          fs.readFileSync(path.join(featureMigrationsDir("webhooks"), f), "utf8"),
        ),
      ),
    ).toBe(true);
  });

  it("are found by the write check, in Kysely builders and raw SQL alike", () => {
    // The check above is only as good as what it finds: it must see both forms of every
    // write it claims to look for, in this repository's own code.
    const all = filesUnder(path.join(ROOT, "src")).map((f) => fs.readFileSync(f, "utf8"));
    expect(all.some((t) => /\.insertInto\("cases"\)/.test(t))).toBe(true);
    expect(writesUnder(path.join(ROOT, "src/modules/cases"), created).map((w) => w.table)).toContain("cases");
    expect(writesUnder(path.join(ROOT, "src/modules/engine"), created).map((w) => w.table)).toEqual(
      expect.arrayContaining(["case_steps", "case_waits"]),
    );
  });
});
