import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "./support/app.js";
import { type Child, runTs } from "./support/children/process.js";
import { adminHeaders } from "./support/fixtures.js";
import {
  answerRfi,
  injectPut,
  mintSlot,
  openRequest,
  raiseRfi,
  uploadDocument,
  uploadErrorOf,
  waitFor,
} from "./support/rfi.js";
import { startTestS3, type TestS3 } from "./support/s3.js";

/**
 * What only the S3 store has: the start refused for a bucket that is missing or refuses the
 * credentials, a bucket lost while running, and an S3-compatible server that does not enforce
 * `If-None-Match`. (uploads.test.ts and the rfi tests run against S3 too with CDS_TEST_BLOB_STORE=s3.)
 */

let s3: TestS3;
let h: TestApp;
beforeAll(async () => {
  s3 = await startTestS3();
  h = await createTestApp({ blobStore: "s3", s3: await s3.createBucket() });
  await h.startWorker();
});
afterAll(async () => {
  await h?.close();
  await s3?.close();
});

function download(caseId: string, uploadId: string) {
  return h.app.inject({
    method: "GET",
    url: `/admin/cases/${caseId}/documents/${uploadId}`,
    headers: adminHeaders,
  });
}

describe("the start with CDS_BLOB_STORE=s3", () => {
  const running: Child[] = [];
  const dirs: string[] = [];
  afterAll(async () => {
    for (const child of running) {
      child.kill("SIGKILL");
      await child.exited;
    }
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  function serve(env: Record<string, string>): Child {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cds-s3-serve-"));
    dirs.push(dir);
    const child = runTs("src/main.ts", ["serve"], {
      DATABASE_URL: "",
      CDS_ADMIN_TOKEN: "",
      CDS_DATA_DIR: dir,
      CDS_LOG_LEVEL: "info",
      PORT: "0",
      CDS_BLOB_STORE: "s3",
      CDS_S3_ENDPOINT: s3.endpoint,
      CDS_S3_FORCE_PATH_STYLE: "true",
      CDS_S3_BUCKET: h.ctx.config.s3?.bucket,
      ...env,
    });
    running.push(child);
    return child;
  }

  it("stops with exit code 78 naming the variable: no bucket named, a missing bucket, refused credentials", async () => {
    const unnamed = serve({ CDS_S3_BUCKET: "" });
    expect(await unnamed.exited).toBe(78);
    expect(unnamed.stderr()).toBe(
      "configuration error: CDS_S3_BUCKET: is required when CDS_BLOB_STORE is s3\n",
    );
    const missing = serve({ CDS_S3_BUCKET: "no-such-bucket" });
    expect(await missing.exited).toBe(78);
    expect(missing.stderr()).toBe(
      'configuration error: CDS_S3_BUCKET: the bucket "no-such-bucket" does not exist\n',
    );
    const refused = serve({ AWS_ACCESS_KEY_ID: "NOT-A-KEY", AWS_SECRET_ACCESS_KEY: "wrong" });
    expect(await refused.exited).toBe(78);
    expect(refused.stderr()).toMatch(
      /^configuration error: AWS_ACCESS_KEY_ID: the bucket "[a-z0-9-]+" refused the credentials \(.+\)\n$/,
    );
  }, 120_000);

  it("starts with a bucket that answers", async () => {
    const good = serve({});
    await good.line(/"msg":"case decisioning service started"/);
    good.kill("SIGTERM");
    expect(await good.exited).toBe(0);
  }, 120_000);
});

describe("a bucket lost while running", () => {
  it("makes /ready say so, and uploads, answers with documents and reads answer 503 unavailable, never 500", async () => {
    const lost = await s3.createBucket();
    const other = await createTestApp({ blobStore: "s3", s3: lost });
    try {
      await other.startWorker();
      await waitFor(
        async () => ((await other.app.inject({ url: "/ready" })).statusCode === 200 ? true : undefined),
        20_000,
        "ready",
      );
      const o = await openRequest(other.app, other.ctx);
      const minted = await mintSlot(other.app, o.partner, o.caseId, o.rfiId);
      expect(minted.statusCode).toBe(201);
      const { uploadId } = minted.json();

      await s3.deleteBucket(lost.bucket);
      const ready = await other.app.inject({ url: "/ready" });
      expect(ready.statusCode).toBe(503);
      expect(ready.json()).toEqual({
        code: "unavailable",
        error: `document storage unavailable: the bucket "${lost.bucket}" does not exist`,
      });
      const mint = await mintSlot(other.app, o.partner, o.caseId, o.rfiId);
      expect(mint.statusCode).toBe(503);
      expect(mint.json().error).toBe("unavailable");
      expect(mint.headers["retry-after"]).toBe("5");
      const answer = await answerRfi(other.app, o.partner, o.caseId, o.rfiId, { documents: [{ uploadId }] });
      expect(answer.statusCode).toBe(503);
      expect(answer.json().error).toBe("unavailable");
      const read = await other.app.inject({
        url: `/admin/cases/${o.caseId}/documents/${uploadId}`,
        headers: adminHeaders,
      });
      expect(read.statusCode).toBe(503);
      expect(read.json().error).toBe("unavailable");

      // Back again: ready, and the minting resumes.
      await s3.createBucket(lost.bucket);
      expect((await other.app.inject({ url: "/ready" })).statusCode).toBe(200);
      expect((await mintSlot(other.app, o.partner, o.caseId, o.rfiId)).statusCode).toBe(201);
    } finally {
      await other.close();
    }
  }, 60_000);
});

describe("an S3-compatible server that does not enforce If-None-Match", () => {
  it("still never attaches an upload twice, though the object could be written again", async () => {
    s3.enforceIfNoneMatch = false;
    try {
      const o = await openRequest(h.app, h.ctx);
      const first = Buffer.from("%PDF-first");
      const minted = (
        await mintSlot(h.app, o.partner, o.caseId, o.rfiId, { sizeBytes: first.length })
      ).json();
      expect((await injectPut(h.app, minted.uploadUrl, first)).statusCode).toBe(200);
      const answered = await answerRfi(h.app, o.partner, o.caseId, o.rfiId, {
        documents: [{ uploadId: minted.uploadId }],
      });
      expect(answered.statusCode).toBe(200);

      const before = await download(o.caseId, minted.uploadId);
      expect(before.statusCode).toBe(200);
      expect(before.body).toBe("%PDF-first");

      // This server takes a second PUT to the same URL (S3 itself would answer 412)...
      const again = await injectPut(h.app, minted.uploadUrl, Buffer.from("%PDF-other"));
      expect(again.statusCode, uploadErrorOf(again)).toBe(200);
      // ...and the replaced bytes are never served as the attached document.
      const after = await download(o.caseId, minted.uploadId);
      expect(after.statusCode).toBe(409);
      expect(after.json().error).toBe("document_replaced");
      // ...but the slot is attached once: neither its request nor another takes it again.
      const twice = await answerRfi(h.app, o.partner, o.caseId, o.rfiId, {
        documents: [{ uploadId: minted.uploadId }],
      });
      expect(twice.statusCode).toBe(409);
      expect(twice.json().error).toBe("already_answered");
      const { rfiId } = await raiseRfi(h.app, o.partner, o.caseId);
      const elsewhere = await answerRfi(h.app, o.partner, o.caseId, rfiId, {
        documents: [{ uploadId: minted.uploadId }],
      });
      expect(elsewhere.statusCode).toBe(422);
      expect(elsewhere.json()).toMatchObject({ error: "document_not_uploaded", uploadId: minted.uploadId });

      // Racing answers on one request with one upload: exactly one attaches it.
      const r = await openRequest(h.app, h.ctx, o.partner);
      const doc = await uploadDocument(h.app, o.partner, r.caseId, r.rfiId);
      const racing = await Promise.all(
        Array.from({ length: 5 }, () =>
          answerRfi(h.app, o.partner, r.caseId, r.rfiId, { documents: [{ uploadId: doc }] }),
        ),
      );
      expect(racing.map((x) => x.statusCode).sort()).toEqual([200, 409, 409, 409, 409]);
      const attached = await h.ctx.db.root
        .selectFrom("rfi_upload_slots")
        .select("attached_at")
        .where("id", "=", doc)
        .executeTakeFirstOrThrow();
      expect(attached.attached_at).not.toBeNull();
      expect((await download(r.caseId, doc)).statusCode).toBe(200);
    } finally {
      s3.enforceIfNoneMatch = true;
    }
  });
});
