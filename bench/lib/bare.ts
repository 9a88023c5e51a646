import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { SERVICE_NODE_FLAGS } from "../../src/platform/node-flags.js";
import { createDatabase } from "./database.js";
import { PROJECT_ROOT } from "./server.js";

export interface BareServer {
  url: string;
  stop(): Promise<void>;
}

/** Starts bench/lib/bare-insert-server.ts on a fresh database of its own (PostgreSQL or PGlite). */
export async function startBareServer(database: "postgres" | "pglite"): Promise<BareServer> {
  const db = database === "postgres" ? await createDatabase() : undefined;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cds-bare-"));
  // The service's node flags: the baseline runs as the service does.
  const child = spawn(
    process.execPath,
    [...SERVICE_NODE_FLAGS, "--import", "tsx", "bench/lib/bare-insert-server.ts"],
    {
      cwd: PROJECT_ROOT,
      env: { ...process.env, DATABASE_URL: db?.url ?? "", CDS_DATA_DIR: dataDir },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8");
      const found = /listening at (http:\/\/\S+)/.exec(output);
      if (found) resolve(found[1] as string);
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8");
    });
    child.once("exit", (code) => reject(new Error(`the bare insert server exited (${code}):\n${output}`)));
  });
  return {
    url,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
        await exited;
        clearTimeout(timer);
      }
      await db?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
