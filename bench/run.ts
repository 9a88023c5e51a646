/**
 * `npm run bench [-- <scenario> …]`: runs every scenario in bench/scenarios/ (in file name order),
 * or those named, against the real service in a child process, prints each one's table and
 * writes all results as JSON into bench/results/. See bench/README.md.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { runScenarios } from "./lib/harness.js";
import type { Scenario } from "./lib/types.js";

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), "scenarios");

async function loadScenarios(wanted: string[]): Promise<Scenario[]> {
  const files = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith(".ts"))
    .sort();
  const all: Array<{ file: string; scenario: Scenario }> = [];
  for (const file of files) {
    const module = (await import(pathToFileURL(path.join(dir, file)).href)) as { default?: Scenario };
    if (!module.default?.run) {
      throw new Error(`bench/scenarios/${file} has no default export {name, description, run}`);
    }
    all.push({ file, scenario: module.default });
  }
  if (wanted.length === 0) return all.map((s) => s.scenario);
  // A scenario answers to its name, its file name, or its file name without the number: tags, 01-tags.
  const aliases = (file: string, scenario: Scenario) => [
    scenario.name,
    file,
    file.replace(/\.ts$/, ""),
    file.replace(/^\d+-|\.ts$/g, ""),
  ];
  const unknown = wanted.filter(
    (w) => !all.some(({ file, scenario }) => aliases(file, scenario).includes(w)),
  );
  if (unknown.length > 0) {
    throw new Error(
      `no scenario named ${unknown.join(", ")}; there are: ${all.map((s) => s.scenario.name).join(", ")}`,
    );
  }
  return all
    .filter(({ file, scenario }) => aliases(file, scenario).some((a) => wanted.includes(a)))
    .map((s) => s.scenario);
}

process.exitCode = (await runScenarios(await loadScenarios(process.argv.slice(2)))) ? 0 : 1;
