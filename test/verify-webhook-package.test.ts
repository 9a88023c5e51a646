import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "./support/app.js";
import { adminHeaders, createPartner, type Partner } from "./support/fixtures.js";
import { configureWebhook, Receiver } from "./support/receiver.js";
import { amountScreen, createWorkflow, kycSubject } from "./support/workflows.js";

const run = promisify(execFile);
const PACKAGE_DIR = new URL("../packages/verify-webhook/", import.meta.url).pathname;
const TSC = new URL("../node_modules/typescript/bin/tsc", import.meta.url).pathname;

let h: TestApp;
let receiver: Receiver;
let partner: Partner;
let consumer: string;

beforeAll(async () => {
  h = await createTestApp();
  await h.startWorker();
  receiver = await Receiver.start();
  partner = await createPartner(h.app);
  await createWorkflow(h.app, partner.tenantId, "screen", amountScreen);
  // A partner's project: an empty directory with the packed tarball installed, nothing else.
  consumer = fs.mkdtempSync(path.join(os.tmpdir(), "cds-consumer-"));
  const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", consumer], {
    cwd: PACKAGE_DIR,
  });
  const tarball = path.join(consumer, (JSON.parse(stdout) as Array<{ filename: string }>)[0]?.filename ?? "");
  fs.writeFileSync(path.join(consumer, "package.json"), JSON.stringify({ name: "consumer", type: "module" }));
  await run("npm", ["install", tarball, "--offline", "--no-audit", "--no-fund", "--ignore-scripts"], {
    cwd: consumer,
  });
});
afterAll(async () => {
  await receiver.close();
  await h.close();
  fs.rmSync(consumer, { recursive: true, force: true });
});

describe("the @case-decisioning/verify-webhook package", () => {
  it("installs from its tarball with no dependencies, as ESM with types", () => {
    const installed = path.join(consumer, "node_modules", "@case-decisioning", "verify-webhook");
    const manifest = JSON.parse(fs.readFileSync(path.join(installed, "package.json"), "utf8"));
    expect(manifest.dependencies ?? {}).toEqual({});
    expect(manifest.type).toBe("module");
    expect(fs.readdirSync(installed).sort()).toEqual(["README.md", "index.d.ts", "index.js", "package.json"]);
    const installedPackages = fs
      .readdirSync(path.join(consumer, "node_modules"))
      .filter((n) => !n.startsWith("."));
    expect(installedPackages).toEqual(["@case-decisioning"]);
  });

  it("verifies a real delivery of the running service, picks the secret by its id and gives the dedup key", async () => {
    const hook = "/hooks/package";
    await configureWebhook(h.app, adminHeaders, partner.tenantId, {
      url: receiver.url(hook),
      secrets: [
        { id: "2025-01", secret: "whsec_previous_0123456789abcdef" },
        { id: "2025-06", secret: "whsec_current_0123456789abcdefg" },
      ],
      activeSecretId: "2025-06",
    });
    const submitted = await h.app.inject({
      method: "POST",
      url: "/cases",
      headers: partner.headers,
      payload: { workflowId: "screen", type: "KYC", payload: { amount: 5 }, subject: kycSubject },
    });
    expect(submitted.statusCode).toBe(201);
    const [delivery] = await receiver.waitFor(1, { path: hook });
    if (!delivery) throw new Error("no delivery arrived");

    const program = `
      import { dedupKey, verifyWebhook } from "@case-decisioning/verify-webhook";
      const input = JSON.parse(await new Response(process.stdin).text());
      const body = Buffer.from(input.body, "base64");
      const rotation = { "2025-01": "whsec_previous_0123456789abcdef", "2025-06": "whsec_current_0123456789abcdefg" };
      console.log(JSON.stringify({
        rotation: verifyWebhook({ body, headers: input.headers, secrets: rotation }),
        onlyOld: verifyWebhook({ body, headers: input.headers, secrets: { "2025-01": rotation["2025-01"] } }),
        tampered: verifyWebhook({ body: Buffer.concat([body, Buffer.from(" ")]), headers: input.headers, secrets: rotation }),
        key: dedupKey(JSON.parse(body.toString("utf8"))),
        rfiKey: dedupKey({ webhookId: "w", event_type: "case.rfi_answered", rfi_id: "r-1" }),
      }));
    `;
    fs.writeFileSync(path.join(consumer, "verify.mjs"), program);
    const child = execFile("node", ["verify.mjs"], { cwd: consumer });
    child.stdin?.end(JSON.stringify({ body: delivery.body.toString("base64"), headers: delivery.headers }));
    const out = await new Promise<string>((resolve, reject) => {
      let text = "";
      child.stdout?.on("data", (chunk) => {
        text += chunk;
      });
      child.on("error", reject);
      child.on("close", (code) => (code === 0 ? resolve(text) : reject(new Error(`exit ${code}: ${text}`))));
    });
    expect(delivery.headers["x-service-secret-id"]).toBe("2025-06");
    expect(JSON.parse(out)).toEqual({
      rotation: true,
      onlyOld: false,
      tampered: false,
      key: delivery.json().webhookId,
      rfiKey: "case.rfi_answered:r-1",
    });
  });

  it("type-checks a TypeScript consumer against its declarations", async () => {
    fs.writeFileSync(
      path.join(consumer, "check.ts"),
      [
        'import { dedupKey, verifyWebhook, type WebhookSecrets } from "@case-decisioning/verify-webhook";',
        'const secrets: WebhookSecrets = [{ id: "a", secret: "s" }];',
        "const ok: boolean = verifyWebhook({ body: new Uint8Array(), headers: new Headers(), secrets });",
        'const key: string = dedupKey({ webhookId: "w", event_type: "case.decided" });',
        "console.log(ok, key);",
      ].join("\n"),
    );
    const args = ["--noEmit", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext"];
    const typed = await run("node", [TSC, ...args, "--lib", "es2023,dom", "check.ts"], {
      cwd: consumer,
    }).catch((err: { stdout: string }) => err);
    expect(typed.stdout).toBe("");
    fs.writeFileSync(
      path.join(consumer, "wrong.ts"),
      'import { verifyWebhook } from "@case-decisioning/verify-webhook";\nverifyWebhook({ body: {}, headers: {}, secrets: 1 });\n',
    );
    const wrong = await run("node", [TSC, ...args, "--lib", "es2023,dom", "wrong.ts"], {
      cwd: consumer,
    }).catch((err: { stdout: string }) => err);
    expect(wrong.stdout).toMatch(/error TS2322/);
  });
});
