import { type CliIo, runCli } from "../../src/main.js";
import { ADMIN_TOKEN } from "./app.js";

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the `cds` CLI in-process against the service at `url` with the operator token. */
export async function runCds(url: string, ...argv: string[]): Promise<CliResult> {
  let stdout = "";
  let stderr = "";
  const io: CliIo = {
    env: { CDS_URL: url, CDS_ADMIN_TOKEN: ADMIN_TOKEN },
    stdout: (t) => {
      stdout += t;
    },
    stderr: (t) => {
      stderr += t;
    },
  };
  const code = await runCli(argv, io);
  return { code, stdout, stderr };
}
