import { execFile } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { promisify } from "node:util";
import openapiTS, { astToString } from "openapi-typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBase62 } from "../src/platform/crypto.js";
import { ADMIN_TOKEN, createTestApp, type TestApp } from "./support/app.js";

const run = promisify(execFile);
const CLIENT_DIR = new URL("./client/", import.meta.url).pathname;
const TSC = new URL("../node_modules/typescript/bin/tsc", import.meta.url).pathname;

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

let h: TestApp;
let baseUrl: string;
let work: string;
beforeAll(async () => {
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  h = await createTestApp({ port, publicUrl: baseUrl });
  await h.startWorker();
  await h.app.listen({ port, host: "127.0.0.1" });
  work = path.join(CLIENT_DIR, `.work-${randomBase62(8)}`);
  fs.mkdirSync(work);
});
afterAll(async () => {
  await h.close();
  fs.rmSync(work, { recursive: true, force: true });
});

describe("a client generated from /openapi.json", () => {
  it("compiles a partner's program (openapi-typescript + openapi-fetch) that then runs against the service", async () => {
    const doc = (await (await fetch(`${baseUrl}/openapi.json`)).json()) as Parameters<typeof openapiTS>[0];
    fs.writeFileSync(path.join(work, "api.d.ts"), astToString(await openapiTS(doc)));
    fs.copyFileSync(path.join(CLIENT_DIR, "program.ts"), path.join(work, "program.ts"));

    const compiled = await run(
      "node",
      [
        TSC,
        ...["--strict", "--noUncheckedIndexedAccess", "--skipLibCheck"],
        ...["--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022"],
        ...["--lib", "es2023,dom", "--types", "node", "--outDir", path.join(work, "out")],
        path.join(work, "program.ts"),
      ],
      { cwd: work },
    ).catch((err: { stdout: string }) => err);
    expect(compiled.stdout).toBe("");

    const { stdout } = await run("node", [path.join(work, "out", "program.js"), baseUrl, ADMIN_TOKEN], {
      cwd: work,
    });
    expect(JSON.parse(stdout)).toEqual({
      caseStatus: "received",
      firstName: "Ada",
      tag: "vip",
      notFound: { status: 404, code: "not_found" },
      upload: 200,
      documents: 1,
    });
  });

  it("fails to compile a program that misuses a typed error or a case field", async () => {
    fs.writeFileSync(
      path.join(work, "wrong.ts"),
      [
        'import type { components } from "./api.js";',
        'const error: components["schemas"]["Error"] = { error: "x", code: "no_such_code" };',
        'const status: components["schemas"]["Case"]["status"] = "pending_forever";',
        "console.log(error, status);",
      ].join("\n"),
    );
    const wrong = await run(
      "node",
      [TSC, "--strict", "--noEmit", "--module", "nodenext", "--moduleResolution", "nodenext", "wrong.ts"],
      { cwd: work },
    ).catch((err: { stdout: string }) => err);
    expect(wrong.stdout.match(/error TS2322/g)).toHaveLength(2);
  });
});
