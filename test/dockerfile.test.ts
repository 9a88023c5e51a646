import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import type { WorkflowDefinition } from "../src/modules/workflows/workflow.types.js";
import { ADMIN_TOKEN } from "./support/app.js";
import { type Child, PROJECT_ROOT, runCommand } from "./support/children/process.js";
import { createServerDatabase, SERVER_URL } from "./support/db.js";
import { execForm, type Instruction, readStages } from "./support/dockerfile.js";
import { adminHeaders } from "./support/fixtures.js";
import { startTestS3 } from "./support/s3.js";
import { kycSubject } from "./support/workflows.js";

/**
 * The Dockerfile cannot be built here, so this test performs its steps, read from the file
 * itself: the build stage's `npm run build` over its COPYs, then the final stage in a fresh
 * directory: its COPYs, its production-only `npm ci` (offline, from the npm cache), its ENV and
 * its CMD, started on PostgreSQL and S3, and its HEALTHCHECK. A document is uploaded and read
 * back. A step the image needs and the Dockerfile lacks (a folder not copied, a dependency only
 * installed for development) fails here.
 *
 * Left out, and said so: the base image, `USER node` and the `chown` of the data directory (a
 * fresh directory stands in for it), the build stage's full `npm ci` (the project's own install
 * stands in for it: CI's `npm ci` from the same lock file), and `npm cache clean`.
 */

function copyInto(dir: string, args: string): void {
  const parts = args.split(/\s+/);
  const dest = parts.pop() as string;
  for (const source of parts) {
    const target = dest.endsWith("/") ? path.join(dir, dest, path.basename(source)) : path.join(dir, dest);
    fs.cpSync(path.join(PROJECT_ROOT, source), target, { recursive: true });
  }
}

function parseEnv(args: string): Record<string, string> {
  return Object.fromEntries(
    [...args.matchAll(/([A-Z_]+)=(\S+)/g)].map((m) => [m[1] as string, m[2] as string]),
  );
}

const dirs: string[] = [];
const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const clean of cleanups.reverse()) await clean();
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

function freshDir(name: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `cds-image-${name}-`));
  dirs.push(dir);
  return dir;
}

const asking: WorkflowDefinition = {
  inputSchema: { type: "object" },
  start: "ask",
  nodes: [
    {
      id: "ask",
      type: "information_request",
      to: "'ada@example.com'",
      subject: "'Proof'",
      body: "'Please send a bill'",
      awaitResponse: true,
      expiresInSeconds: 3600,
      next: "done",
      onExpired: "done",
      onCancelled: "done",
    },
    { id: "done", type: "decision", decision: "approved", output: {} },
  ],
};

it.skipIf(!SERVER_URL)(
  "the Dockerfile's steps install production dependencies only, start the service on PostgreSQL and S3, and serve an upload",
  async () => {
    const stages = readStages();
    expect(stages).toHaveLength(2);
    const [build, final] = stages as [Instruction[], Instruction[]];
    expect(build[0]?.args).toMatch(/ AS build$/);

    // The build stage: its COPYs, then its RUNs (the full install stood in for by the project's own).
    const buildDir = freshDir("build");
    for (const step of build) {
      if (step.op === "COPY") copyInto(buildDir, step.args);
      if (step.op === "RUN" && /^npm ci\b/.test(step.args)) {
        fs.symlinkSync(path.join(PROJECT_ROOT, "node_modules"), path.join(buildDir, "node_modules"));
      } else if (step.op === "RUN") {
        execFileSync("sh", ["-c", step.args], { cwd: buildDir, stdio: "pipe" });
      }
    }

    // The final stage, in a fresh directory.
    const app = freshDir("app");
    const env: Record<string, string> = {};
    let cmd: string[] = [];
    let healthcheck: string[] = [];
    for (const step of final) {
      if (step.op === "ENV") Object.assign(env, parseEnv(step.args));
      if (step.op === "COPY" && step.args.startsWith("--from=build ")) {
        const [from, to] = step.args.replace("--from=build ", "").split(/\s+/) as [string, string];
        fs.cpSync(path.join(buildDir, path.relative("/app", from)), path.join(app, to), { recursive: true });
      } else if (step.op === "COPY") {
        copyInto(app, step.args);
      }
      if (step.op === "RUN") {
        for (const command of step.args.split("&&").map((c) => c.trim())) {
          if (command.startsWith("npm ci")) {
            // Tests reach loopback only: the packages come from the npm cache.
            const install = spawnSync("sh", ["-c", `${command} --offline`], { cwd: app, encoding: "utf8" });
            expect(install.status, install.stderr).toBe(0);
          }
          // npm cache clean, mkdir and chown of /var/lib/cds: the image's own business (see above).
        }
      }
      if (step.op === "CMD") cmd = execForm(step.args);
      if (step.op === "HEALTHCHECK") healthcheck = execForm(step.args);
    }
    expect(env.NODE_ENV).toBe("production");
    expect(final.some((s) => s.op === "USER" && s.args === "node")).toBe(true);
    // Production dependencies only: the service's own are there, the tools of development are not.
    for (const dep of ["fastify", "pg", "@aws-sdk/client-s3", "@case-decisioning/verify-webhook"]) {
      expect(fs.existsSync(path.join(app, "node_modules", dep)), dep).toBe(true);
    }
    for (const dev of ["vitest", "typescript", "tsx", "s3rver", "@biomejs/biome"]) {
      expect(fs.existsSync(path.join(app, "node_modules", dev)), dev).toBe(false);
    }
    expect(fs.existsSync(path.join(app, "src"))).toBe(false);

    // Started as the image starts it, on PostgreSQL and S3 (loopback, a free port).
    const database = await createServerDatabase();
    cleanups.push(() => database.drop());
    const s3 = await startTestS3();
    cleanups.push(() => s3.close());
    const bucket = await s3.createBucket();
    const dataDir = freshDir("data");
    const runEnv = {
      ...env,
      HOST: "127.0.0.1",
      PORT: "0",
      CDS_DATA_DIR: dataDir,
      CDS_LOG_LEVEL: "info",
      DATABASE_URL: database.url,
      CDS_ADMIN_TOKEN: ADMIN_TOKEN,
      CDS_BLOB_STORE: "s3",
      CDS_S3_BUCKET: bucket.bucket,
      CDS_S3_ENDPOINT: bucket.endpoint,
      CDS_S3_FORCE_PATH_STYLE: "true",
    };
    const service: Child = runCommand(
      cmd[0] === "node" ? process.execPath : (cmd[0] as string),
      cmd.slice(1),
      runEnv,
      app,
    );
    cleanups.push(() => service.kill("SIGKILL"));
    const [, base, port] = await service.line(
      /"msg":"Server listening at (http:\/\/127\.0\.0\.1:(\d+))"/,
      60_000,
    );
    const health = spawnSync(
      healthcheck[0] === "node" ? process.execPath : (healthcheck[0] as string),
      healthcheck.slice(1),
      { env: { ...process.env, ...runEnv, PORT: port }, encoding: "utf8" },
    );
    expect(health.status, health.stderr).toBe(0);

    const http = async (method: string, url: string, headers: Record<string, string>, body?: unknown) => {
      const res = await fetch(`${base}${url}`, {
        method,
        headers: body === undefined ? headers : { ...headers, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const raw = Buffer.from(await res.arrayBuffer());
      // biome-ignore lint/suspicious/noExplicitAny: loose JSON
      let json: any;
      try {
        json = JSON.parse(raw.toString());
      } catch {}
      return { status: res.status, json, raw };
    };
    const tenant = await http("POST", "/admin/tenants", adminHeaders, { name: "Image Bank" });
    expect(tenant.status).toBe(201);
    const tenantId = tenant.json.tenantId;
    const key = await http("POST", `/admin/tenants/${tenantId}/api-keys`, adminHeaders, {
      name: "k",
      scopes: ["cases:read", "cases:write"],
    });
    const partner = { "x-api-key": key.json.key as string };
    const version = await http(
      "POST",
      `/admin/tenants/${tenantId}/workflows/ask/versions`,
      adminHeaders,
      asking,
    );
    await http(
      "POST",
      `/admin/tenants/${tenantId}/workflows/ask/versions/${version.json.version}/publish`,
      adminHeaders,
    );
    const submitted = await http("POST", "/cases", partner, {
      workflowId: "ask",
      type: "KYC",
      payload: {},
      subject: kycSubject,
    });
    expect(submitted.status, JSON.stringify(submitted.json)).toBe(201);
    const caseId = submitted.json.caseId;
    let rfiId: string | undefined;
    const deadline = Date.now() + 30_000;
    while (!rfiId) {
      rfiId = (await http("GET", `/cases/${caseId}/rfi`, partner)).json.informationRequests?.[0]?.rfiId;
      if (Date.now() > deadline) throw new Error("no information request was raised");
      if (!rfiId) await new Promise((r) => setTimeout(r, 50));
    }
    const bytes = Buffer.from("%PDF-1.7 from the image");
    const slot = await http("POST", `/cases/${caseId}/rfi/${rfiId}/documents`, partner, {
      filename: "bill.pdf",
      contentType: "application/pdf",
      sizeBytes: bytes.length,
    });
    expect(slot.status, JSON.stringify(slot.json)).toBe(201);
    const put = await fetch(slot.json.uploadUrl, {
      method: "PUT",
      headers: { "content-type": "application/pdf", "if-none-match": "*" },
      body: bytes,
    });
    expect(put.status).toBe(200);
    const answered = await http("POST", `/cases/${caseId}/rfi/${rfiId}/response`, partner, {
      documents: [{ uploadId: slot.json.uploadId }],
    });
    expect(answered.status, JSON.stringify(answered.json)).toBe(200);
    const read = await http("GET", `/admin/cases/${caseId}/documents/${slot.json.uploadId}`, adminHeaders);
    expect(read.status).toBe(200);
    expect(read.raw.equals(bytes)).toBe(true);

    service.kill("SIGTERM");
    expect(await service.exited).toBe(0);
  },
  300_000,
);
