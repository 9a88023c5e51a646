import fs from "node:fs";
import path from "node:path";
import { expect, it } from "vitest";
import { SERVICE_NODE_FLAGS } from "../src/platform/node-flags.js";
import { PROJECT_ROOT } from "./support/children/process.js";
import { execForm, type Instruction, readStages } from "./support/dockerfile.js";

/**
 * The service's node flags (decision 0035) must be on node's command line wherever the service is
 * started for real: `npm start` and the image's CMD. The benchmarks take them from the same list.
 */

/** The arguments `node` gets in a command line, before the script it runs. */
function nodeFlagsOf(command: string[]): string[] {
  const at = command.indexOf("node");
  expect(at, `no node in ${JSON.stringify(command)}`).toBeGreaterThanOrEqual(0);
  const rest = command.slice(at + 1);
  const script = rest.findIndex((arg) => !arg.startsWith("-"));
  return script === -1 ? rest : rest.slice(0, script);
}

it("npm start runs node with the service's flags", () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, "package.json"), "utf8")) as {
    scripts: Record<string, string>;
  };
  const start = pkg.scripts.start ?? "";
  const serve = start.split("&&").map((part) => part.trim().split(/\s+/));
  const command = serve.find((words) => words[0] === "node");
  expect(command, `npm start runs no node: ${start}`).toBeDefined();
  expect(nodeFlagsOf(command as string[])).toEqual([...SERVICE_NODE_FLAGS]);
});

it("the image's CMD runs node with the service's flags", () => {
  const cmd = readStages()
    .at(-1)
    ?.find((i) => i.op === "CMD");
  expect(cmd, "the Dockerfile's last stage has no CMD").toBeDefined();
  expect(nodeFlagsOf(execForm((cmd as Instruction).args))).toEqual([...SERVICE_NODE_FLAGS]);
});
