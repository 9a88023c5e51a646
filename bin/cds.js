#!/usr/bin/env node
// The `cds` command. Runs the compiled CLI, compiling it first on a fresh checkout.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const main = path.join(root, "dist", "main.js");
if (!existsSync(main)) {
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  execFileSync(process.execPath, [tsc, "-p", path.join(root, "tsconfig.build.json")], { stdio: "inherit" });
}
const { runCli } = await import(main);
process.exitCode = await runCli(process.argv.slice(2));
