import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");

export interface Child {
  process: ChildProcess;
  pid: number;
  /** Everything written so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves with the first stdout line matching `pattern`; rejects if the process exits first. */
  line(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  /** Resolves with the exit code (or the signal's name) once the process has ended. */
  exited: Promise<number | string>;
  kill(signal?: NodeJS.Signals): void;
}

/**
 * Runs a TypeScript file (relative to the project root) in a new Node process, the way the
 * service itself is run in development: `node --import tsx <script> …args`.
 */
export function runTs(
  script: string,
  args: string[] = [],
  env: Record<string, string | undefined> = {},
): Child {
  return runCommand(process.execPath, ["--import", "tsx", script, ...args], env);
}

/** Runs a command in the project root with the test's environment plus `env`, its output kept. */
export function runCommand(
  command: string,
  args: string[],
  env: Record<string, string | undefined> = {},
  cwd = PROJECT_ROOT,
): Child {
  const script = args.join(" ");
  const child = spawn(command, args, {
    cwd,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  const waiters = new Set<() => void>();
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    out += chunk;
    for (const w of waiters) w();
  });
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    err += chunk;
  });
  const exited = new Promise<number | string>((resolve) => {
    child.once("exit", (code, signal) => {
      resolve(code ?? signal ?? "unknown");
      for (const w of waiters) w();
    });
  });
  let ended = false;
  void exited.then(() => {
    ended = true;
  });
  if (child.pid === undefined) throw new Error(`could not start ${script}`);
  return {
    process: child,
    pid: child.pid,
    stdout: () => out,
    stderr: () => err,
    exited,
    kill: (signal = "SIGTERM") => {
      child.kill(signal);
    },
    line(pattern, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(`no line matching ${pattern} within ${timeoutMs} ms; stdout:\n${out}\nstderr:\n${err}`),
          );
        }, timeoutMs);
        const check = (): void => {
          const lines = out.split("\n");
          // The last piece is a line still being written, unless the process has ended.
          if (!ended) lines.pop();
          for (const l of lines) {
            const match = pattern.exec(l);
            if (match) {
              clearTimeout(timer);
              waiters.delete(check);
              resolve(match);
              return;
            }
          }
          if (ended || child.exitCode !== null || child.signalCode !== null) {
            clearTimeout(timer);
            waiters.delete(check);
            reject(new Error(`exited before a line matching ${pattern}; stdout:\n${out}\nstderr:\n${err}`));
          }
        };
        waiters.add(check);
        check();
      });
    },
  };
}
