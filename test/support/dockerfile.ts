import fs from "node:fs";
import path from "node:path";
import { PROJECT_ROOT } from "./children/process.js";

/** The repository's Dockerfile as its instructions, stage by stage (a stage starts at FROM). */
export interface Instruction {
  op: string;
  args: string;
}

export function readStages(): Instruction[][] {
  const text = fs.readFileSync(path.join(PROJECT_ROOT, "Dockerfile"), "utf8").replace(/\\\n/g, " ");
  const stages: Instruction[][] = [];
  for (const line of text.split("\n")) {
    const trimmed = line.trim();
    if (trimmed === "" || trimmed.startsWith("#")) continue;
    const [op = "", ...rest] = trimmed.split(/\s+/);
    const instruction = { op: op.toUpperCase(), args: rest.join(" ") };
    if (instruction.op === "FROM") stages.push([]);
    stages.at(-1)?.push(instruction);
  }
  return stages;
}

/** The exec form of CMD or HEALTHCHECK CMD: a JSON array. */
export function execForm(args: string): string[] {
  return JSON.parse(args.replace(/^(--\S+\s+)*CMD\s+/, "")) as string[];
}
