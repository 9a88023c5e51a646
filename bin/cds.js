#!/usr/bin/env node
// The `cds` command. Runs the compiled CLI, compiling it first when the sources are newer than
// the build (a fresh checkout, or a change since the last `npm start` / `npm run build`).
import { execFileSync } from "node:child_process";
import { readdirSync, statSync, utimesSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const main = path.join(root, "dist", "main.js");

function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(full) : statSync(full).mtimeMs);
  }
  return latest;
}

const buildInfo = path.join(root, "dist", ".tsbuildinfo");

function builtAt() {
  try {
    statSync(main);
    return statSync(buildInfo).mtimeMs;
  } catch {
    return 0;
  }
}

if (builtAt() < newest(path.join(root, "src"))) {
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  execFileSync(process.execPath, [tsc, "-p", path.join(root, "tsconfig.build.json")], { stdio: "inherit" });
  // tsc leaves its build info alone when nothing changed; mark the check as done either way.
  const now = new Date();
  utimesSync(buildInfo, now, now);
}
const { runCli } = await import(main);
process.exitCode = await runCli(process.argv.slice(2));
