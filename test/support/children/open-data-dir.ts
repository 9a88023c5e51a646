/**
 * Opens the embedded database in the directory given as the first argument, as a second process
 * would. Prints "opened" once it holds the database; with `hold`, keeps it until killed.
 * A failure to open is printed on stderr and ends the process with code 3.
 */
import { openDb } from "../../../src/platform/db/index.js";

const [dir, mode] = process.argv.slice(2);
if (!dir) throw new Error("usage: open-data-dir.ts <dir> [hold]");
try {
  const db = await openDb({ dataDir: dir });
  process.stdout.write(`opened by ${process.pid}\n`);
  if (mode === "hold") {
    setInterval(() => {}, 60_000);
  } else {
    await db.close();
  }
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(3);
}
