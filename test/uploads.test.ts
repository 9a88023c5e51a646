import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { App } from "../src/platform/app-types.js";
import { createBlobStore } from "../src/platform/blobs/index.js";
import { buildCheckedApp, createTestApp, TEST_BLOB_STORE, type TestApp } from "./support/app.js";
import { adminHeaders, createStoredCase, type Partner } from "./support/fixtures.js";
import {
  answerRfi,
  injectPut,
  listen,
  mintSlot,
  type OpenRequest,
  openRequest as openRequestFor,
  PDF,
  pathOf,
  raiseRfi,
  setCase,
  socketPut,
  uploadDocument,
  uploadErrorOf,
  waitFor,
  waitUntilPast,
} from "./support/rfi.js";
import { securityTests } from "./support/security.js";

let h: TestApp;
let base: string;
beforeAll(async () => {
  h = await createTestApp();
  base = await listen(h.app);
});
afterAll(async () => {
  await h.close();
});

/** Where an upload URL is sent: the listening service itself (disk), or the bucket (s3). */
const originOf = (uploadUrl: string) => (s3 ? new URL(uploadUrl).origin : base);

const openRequest = (partner?: Partner) => openRequestFor(h.app, h.ctx, partner);

function mint(o: OpenRequest, body: Record<string, unknown> = {}) {
  return mintSlot(h.app, o.partner, o.caseId, o.rfiId, body);
}

function download(caseId: string, uploadId: string, headers: Record<string, string> = adminHeaders) {
  return h.app.inject({ method: "GET", url: `/admin/cases/${caseId}/documents/${uploadId}`, headers });
}

/**
 * The PUT goes to the service itself (disk) or to the bucket (s3, a test S3 server that checks
 * what S3 checks): the same refusals, each in its server's words.
 */
const s3 = TEST_BLOB_STORE === "s3";
const REFUSED = s3
  ? { headers: "SignatureDoesNotMatch", expired: "AccessDenied", exists: "PreconditionFailed" }
  : { headers: "forbidden", expired: "forbidden", exists: "precondition_failed" };

/** Uploads whose body is still arriving, on the service's disk or at the test S3 server. */
function uploadsInProgress(): number {
  if (h.s3) return h.s3.uploadsInProgress;
  return fs.readdirSync(path.join(h.ctx.config.dataDir, "blobs", "parts")).length;
}
const pinned = (body: Buffer, contentType = PDF) => ({
  "content-type": contentType,
  "content-length": String(body.length),
  "if-none-match": "*",
});

describe("POST /cases/{caseId}/rfi/{rfiId}/documents", () => {
  securityTests(() => h, {
    scope: "cases:write",
    async request(harness, owner) {
      const caseId = await createStoredCase(harness.ctx, owner.tenantId);
      const { rfiId } = await raiseRfi(harness.app, owner, caseId);
      return {
        method: "POST",
        url: `/cases/${caseId}/rfi/${rfiId}/documents`,
        payload: { filename: "a.pdf", contentType: PDF, sizeBytes: 10 },
      };
    },
  });

  it("answers 201 with uploadId, a signed uploadUrl of this service, and expiresAt one TTL ahead", async () => {
    const o = await openRequest();
    const before = Date.now();
    const res = await mint(o, { filename: "passport.png", contentType: "image/png", sizeBytes: 1234 });
    expect(res.statusCode).toBe(201);
    const slot = res.json();
    expect(Object.keys(slot).sort()).toEqual(["expiresAt", "uploadId", "uploadUrl"]);
    expect(slot.uploadId).toMatch(/^[0-9a-f-]{36}$/);
    const url = new URL(slot.uploadUrl);
    // Objects are keyed per tenant and case.
    const key = `rfi/${o.partner.tenantId}/${o.caseId}/${slot.uploadId}`;
    if (h.s3) {
      expect(slot.uploadUrl.startsWith(`${h.s3.endpoint}/${h.ctx.config.s3?.bucket}/${key}?`)).toBe(true);
      // SigV4 presigned: the three headers signed, and the URL expires with the slot, to the second.
      expect(url.searchParams.get("X-Amz-SignedHeaders")).toBe(
        "content-length;content-type;host;if-none-match",
      );
      const date = (url.searchParams.get("X-Amz-Date") as string).replace(
        /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/,
        "$1-$2-$3T$4:$5:$6Z",
      );
      const expires = Number(url.searchParams.get("X-Amz-Expires"));
      expect(new Date(date).getTime() + expires * 1000).toBe(new Date(slot.expiresAt).getTime());
      expect(url.searchParams.has("x-amz-checksum-crc32")).toBe(false);
    } else {
      expect(slot.uploadUrl.startsWith(`${h.ctx.config.publicUrl}/uploads/${key}?`)).toBe(true);
      expect(url.searchParams.get("signature")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    }
    const ttl = new Date(slot.expiresAt).getTime() - before;
    expect(ttl).toBeGreaterThanOrEqual(h.ctx.config.uploadTtlSeconds * 1000);
    expect(ttl).toBeLessThan(h.ctx.config.uploadTtlSeconds * 1000 + 5000);
  });

  it("accepts a filename of 255 bytes and refuses one of 256 bytes (UTF-8) with 400 invalid_request", async () => {
    const o = await openRequest();
    const at = `${"é".repeat(127)}a`;
    expect((await mint(o, { filename: at })).statusCode).toBe(201);
    const over = await mint(o, { filename: "é".repeat(128) });
    expect(over.statusCode).toBe(400);
    expect(over.json()).toEqual({
      error: "invalid_request",
      message: "filename is 256 bytes as UTF-8; the limit is 255",
    });
  });

  it("accepts the three content types and refuses any other with 400 invalid_request", async () => {
    const o = await openRequest();
    for (const contentType of ["application/pdf", "image/jpeg", "image/png"]) {
      expect((await mint(o, { contentType })).statusCode, contentType).toBe(201);
    }
    for (const contentType of ["image/gif", "application/PDF", "application/pdf; charset=binary", 3]) {
      const res = await mint(o, { contentType });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({
        error: "invalid_request",
        message: "contentType must be one of application/pdf, image/jpeg, image/png",
      });
    }
  });

  it("accepts 1 and 20971520 bytes and refuses 0, 20971521 and non-integers with 400 invalid_request", async () => {
    const o = await openRequest();
    for (const sizeBytes of [1, 20_971_520]) expect((await mint(o, { sizeBytes })).statusCode).toBe(201);
    for (const sizeBytes of [0, 20_971_521, 1.5, "10", null, -1]) {
      const res = await mint(o, { sizeBytes });
      expect(res.statusCode, String(sizeBytes)).toBe(400);
      expect(res.json().error).toBe("invalid_request");
      expect(res.json().message).toMatch(/^sizeBytes must be an integer from 1 to 20971520/);
    }
  });

  it("answers 400 naming the field for a missing or malformed filename and a non-object body", async () => {
    const o = await openRequest();
    for (const [body, message] of [
      [{ filename: "" }, /filename is required/],
      [{ filename: 7 }, /filename is required/],
      [{ filename: "a\nb.pdf" }, /control characters/],
    ] as const) {
      const res = await mint(o, body);
      expect(res.statusCode).toBe(400);
      expect(res.json().message).toMatch(message);
    }
    const array = await h.app.inject({
      method: "POST",
      url: `/cases/${o.caseId}/rfi/${o.rfiId}/documents`,
      headers: o.partner.headers,
      payload: [],
    });
    expect(array.statusCode).toBe(400);
    expect(array.json().message).toMatch(/JSON object/);
  });

  it("counts 30 slots per request for good: the 31st is 422 upload_limit_reached though none was uploaded", async () => {
    const o = await openRequest();
    for (let i = 0; i < 30; i++) expect((await mint(o)).statusCode).toBe(201);
    const over = await mint(o);
    expect(over.statusCode).toBe(422);
    expect(over.json().error).toBe("upload_limit_reached");
    expect(over.json().message).toMatch(/30/);
    // A refused mint does not count, and a refused body does not either.
    expect((await mint(o, { sizeBytes: 0 })).statusCode).toBe(400);
    const view = await h.app.inject({
      method: "GET",
      url: `/cases/${o.caseId}/rfi/${o.rfiId}`,
      headers: o.partner.headers,
    });
    expect(view.json().uploadSlotsMinted).toBe(30);
  });

  it("counts 100 slots per case across its requests: the 101st is 422 upload_limit_reached", async () => {
    const o = await openRequest();
    const rfis = [o.rfiId];
    for (let i = 0; i < 4; i++) rfis.push((await raiseRfi(h.app, o.partner, o.caseId)).rfiId);
    const plan = [30, 30, 30, 10];
    for (const [i, n] of plan.entries()) {
      for (let k = 0; k < n; k++)
        expect((await mintSlot(h.app, o.partner, o.caseId, rfis[i] as string)).statusCode).toBe(201);
    }
    const over = await mintSlot(h.app, o.partner, o.caseId, rfis[4] as string);
    expect(over.statusCode).toBe(422);
    expect(over.json()).toMatchObject({ error: "upload_limit_reached" });
    expect(over.json().message).toMatch(/case has used all 100/);
  });

  it("counts exactly under concurrent minting: 30 of 40 on one request, 100 of 130 on one case", async () => {
    const o = await openRequest();
    const one = await Promise.all(Array.from({ length: 40 }, () => mint(o)));
    expect(one.filter((r) => r.statusCode === 201)).toHaveLength(30);
    expect(one.filter((r) => r.statusCode === 422)).toHaveLength(10);

    const caseId = await createStoredCase(h.ctx, o.partner.tenantId);
    const rfis: string[] = [];
    for (let i = 0; i < 5; i++) rfis.push((await raiseRfi(h.app, o.partner, caseId)).rfiId);
    const many = await Promise.all(
      rfis.flatMap((rfiId, i) =>
        Array.from({ length: i === 4 ? 10 : 30 }, () => mintSlot(h.app, o.partner, caseId, rfiId)),
      ),
    );
    expect(many.filter((r) => r.statusCode === 201)).toHaveLength(100);
    expect(many.filter((r) => r.statusCode === 422)).toHaveLength(30);
    expect(many.every((r) => r.statusCode === 201 || r.json().error === "upload_limit_reached")).toBe(true);
    const slots = await h.ctx.db.root
      .selectFrom("rfi_upload_slots")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("case_id", "=", caseId)
      .executeTakeFirstOrThrow();
    expect(Number(slots.n)).toBe(100);
  });

  it("answers 404 for an unknown request, and checks 404 and 409 before the body", async () => {
    const o = await openRequest();
    const unknown = await mintSlot(h.app, o.partner, o.caseId, crypto.randomUUID(), { sizeBytes: 0 });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual({ error: "not_found", message: "information request not found" });
    await h.app.inject({
      method: "POST",
      url: `/admin/cases/${o.caseId}/rfi/${o.rfiId}/cancel`,
      headers: adminHeaders,
    });
    const cancelled = await mint(o, { sizeBytes: 0 });
    expect(cancelled.statusCode).toBe(409);
    expect(cancelled.json()).toEqual({
      error: "not_pending",
      message: "the information request is cancelled, not pending",
    });
  });

  it("answers 409 not_pending once answered, case_terminal on a closed case and dry_run on a dry run", async () => {
    const answered = await openRequest();
    await answerRfi(h.app, answered.partner, answered.caseId, answered.rfiId, {
      fields: [{ key: "a", value: 1 }],
    });
    expect((await mint(answered)).json().error).toBe("not_pending");
    for (const [change, code] of [
      [{ status: "closed" }, "case_terminal"],
      [{ status: "failed" }, "case_terminal"],
      [{ dryRun: true }, "dry_run"],
    ] as const) {
      const o = await openRequest();
      await setCase(h.ctx, o.caseId, change);
      const res = await mint(o);
      expect(res.statusCode).toBe(409);
      expect(res.json().error).toBe(code);
    }
  });
});

describe("PUT {uploadUrl}", () => {
  async function slot(o: OpenRequest, body: Buffer, contentType = PDF) {
    return (await mint(o, { sizeBytes: body.length, contentType })).json() as {
      uploadId: string;
      uploadUrl: string;
      expiresAt: string;
    };
  }

  it("stores the object with exactly the declared headers, and an analyst reads it back with its type", async () => {
    const o = await openRequest();
    const bytes = Buffer.from("\x89PNG\r\n\x1a\n fake image bytes");
    const s = await slot(o, bytes, "image/png");
    const res = await injectPut(h.app, s.uploadUrl, bytes, { "content-type": "image/png" });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe("");
    const doc = await download(o.caseId, s.uploadId);
    expect(doc.statusCode).toBe(200);
    expect(doc.headers["content-type"]).toBe("image/png");
    expect(doc.headers["content-length"]).toBe(String(bytes.length));
    expect(doc.headers["content-disposition"]).toBe(
      `attachment; filename="statement.pdf"; filename*=UTF-8''statement.pdf`,
    );
    expect(doc.headers["x-content-type-options"]).toBe("nosniff");
    expect(doc.rawPayload.equals(bytes)).toBe(true);
  });

  it("answers 403 for a wrong Content-Type, Content-Length or a missing If-None-Match: *, storing nothing", async () => {
    const o = await openRequest();
    const bytes = Buffer.from("%PDF-1.7");
    const longer = Buffer.from("%PDF-1.7+");
    const s = await slot(o, bytes);
    for (const [headers, body] of [
      [{ "content-type": "image/png" }, bytes],
      [{ "content-type": "application/pdf; charset=binary" }, bytes],
      [{ "content-type": undefined }, bytes],
      [{}, longer],
      [{ "if-none-match": undefined }, bytes],
      [{ "if-none-match": '"abc"' }, bytes],
    ] as const) {
      const res = await injectPut(h.app, s.uploadUrl, body, headers);
      expect(res.statusCode, JSON.stringify(headers)).toBe(403);
      expect(uploadErrorOf(res)).toBe(REFUSED.headers);
    }
    expect((await download(o.caseId, s.uploadId)).statusCode).toBe(404);
    expect((await injectPut(h.app, s.uploadUrl, bytes)).statusCode).toBe(200);
  });

  it("answers 403 for a tampered signature, size, type or object, naming no signature", async () => {
    const o = await openRequest();
    const bytes = Buffer.from("%PDF-1.7");
    const s = await slot(o, bytes);
    const other = await slot(o, bytes);
    const url = new URL(s.uploadUrl);
    const tamper = (name: string, value: string) => {
      const u = new URL(url);
      u.searchParams.set(name, value);
      return u.toString();
    };
    const flip = (value: string) => `${value.slice(0, -1)}${value.endsWith("a") ? "b" : "a"}`;
    const longer = Buffer.concat([bytes, Buffer.from("x")]);
    // Each variant sends headers that agree with its (altered) URL: only the signature can refuse it.
    const signature = url.searchParams.get(s3 ? "X-Amz-Signature" : "signature") as string;
    const variants: Array<[string, Buffer, Record<string, string>]> = s3
      ? [
          [tamper("X-Amz-Signature", flip(signature)), bytes, {}],
          [tamper("X-Amz-SignedHeaders", "host"), longer, { "content-type": "image/png" }],
          [tamper("X-Amz-Expires", String(Number(url.searchParams.get("X-Amz-Expires")) + 3600)), bytes, {}],
          [
            tamper("X-Amz-Date", flip(url.searchParams.get("X-Amz-Date") as string).replace(/b$/, "Z")),
            bytes,
            {},
          ],
          [s.uploadUrl.replace(s.uploadId, other.uploadId), bytes, {}],
          [`${url.origin}${url.pathname}`, bytes, {}],
        ]
      : [
          [tamper("signature", flip(signature)), bytes, {}],
          [tamper("contentLength", String(longer.length)), longer, {}],
          [tamper("contentType", "image/png"), bytes, { "content-type": "image/png" }],
          [tamper("expires", String(Number(url.searchParams.get("expires")) + 3600)), bytes, {}],
          [s.uploadUrl.replace(s.uploadId, other.uploadId), bytes, {}],
          [`${url.origin}${url.pathname}`, bytes, {}],
        ];
    for (const [variant, body, headers] of variants) {
      const res = await injectPut(h.app, variant, body, headers);
      expect(res.statusCode, variant).toBe(403);
      expect(["forbidden", "SignatureDoesNotMatch", "AccessDenied"]).toContain(uploadErrorOf(res));
      expect(res.body).not.toContain(signature);
    }
    expect((await download(o.caseId, s.uploadId)).statusCode).toBe(404);
    expect((await download(o.caseId, other.uploadId)).statusCode).toBe(404);
  });

  it("answers 403 once the URL has expired", async () => {
    const shortLived: App = await buildCheckedApp({
      ...h.ctx,
      config: { ...h.ctx.config, uploadTtlSeconds: 1 },
    });
    try {
      const o = await openRequest();
      const bytes = Buffer.from("%PDF-");
      const s = (
        await mintSlot(shortLived, o.partner, o.caseId, o.rfiId, { sizeBytes: bytes.length })
      ).json();
      await waitUntilPast(s.expiresAt);
      const res = await injectPut(h.app, s.uploadUrl, bytes);
      expect(res.statusCode).toBe(403);
      expect(uploadErrorOf(res)).toBe(REFUSED.expired);
      expect(res.body).toMatch(s3 ? /Request has expired/ : /expired at .* mint a new upload slot/);
    } finally {
      await shortLived.close();
    }
  });

  it("refuses a body whose length differs from the declared size, and stores nothing", async () => {
    const o = await openRequest();
    const declared = Buffer.from("%PDF-1.7 ten");
    const s = await slot(o, declared);
    for (const body of [declared.subarray(0, 5), Buffer.concat([declared, Buffer.from("more")])]) {
      if (s3) {
        // Over a socket a body is as long as its Content-Length says: S3 refuses any but the signed one.
        const res = await injectPut(h.app, s.uploadUrl, body);
        expect(res.statusCode).toBe(403);
        expect(uploadErrorOf(res)).toBe("SignatureDoesNotMatch");
      } else {
        const res = await injectPut(h.app, s.uploadUrl, body, { "content-length": String(declared.length) });
        expect(res.statusCode).toBe(400);
        expect(uploadErrorOf(res)).toBe("invalid_request");
      }
    }
    expect((await download(o.caseId, s.uploadId)).statusCode).toBe(404);
    expect(uploadsInProgress()).toBe(0);
    expect((await injectPut(h.app, s.uploadUrl, declared)).statusCode).toBe(200);
  });

  it("answers 412 to a second PUT and keeps the first object", async () => {
    const o = await openRequest();
    const first = Buffer.from("%PDF-first");
    const s = await slot(o, first);
    expect((await injectPut(h.app, s.uploadUrl, first)).statusCode).toBe(200);
    const second = await injectPut(h.app, s.uploadUrl, Buffer.from("%PDF-other"));
    expect(second.statusCode).toBe(412);
    expect(uploadErrorOf(second)).toBe(REFUSED.exists);
    expect((await download(o.caseId, s.uploadId)).rawPayload.equals(first)).toBe(true);
  });

  it("lets exactly one of 10 racing PUTs create the object; the others answer 412", async () => {
    const o = await openRequest();
    const size = 256 * 1024;
    const bodies = Array.from({ length: 10 }, (_, i) => Buffer.alloc(size, i + 1));
    const s = await slot(o, bodies[0] as Buffer);
    const answers = await Promise.all(
      bodies.map((b) => socketPut(originOf(s.uploadUrl), s.uploadUrl, b, pinned(b))),
    );
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses.filter((x) => x === 200)).toHaveLength(1);
    expect(statuses.filter((x) => x === 412)).toHaveLength(9);
    const winner = bodies[answers.findIndex((a) => a.status === 200)] as Buffer;
    expect((await download(o.caseId, s.uploadId)).rawPayload.equals(winner)).toBe(true);
    await waitFor(async () => (uploadsInProgress() === 0 ? true : undefined), 5000, "parts cleaned");
  });

  it("streams an upload past the 1 MiB JSON body limit", async () => {
    const o = await openRequest();
    const bytes = Buffer.alloc(3 * 1024 * 1024, 7);
    const s = await slot(o, bytes);
    const res = await socketPut(originOf(s.uploadUrl), s.uploadUrl, bytes, pinned(bytes));
    expect(res.status).toBe(200);
    expect((await download(o.caseId, s.uploadId)).rawPayload.equals(bytes)).toBe(true);
  });

  it("keeps no partial object when the client disconnects mid-way, and the slot stays usable", async () => {
    const o = await openRequest();
    const bytes = Buffer.alloc(1024 * 1024, 3);
    const s = await slot(o, bytes);
    const target = new URL(pathOf(s.uploadUrl), originOf(s.uploadUrl));
    const socket = net.connect(Number(target.port), target.hostname);
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    socket.write(
      `PUT ${target.pathname}${target.search} HTTP/1.1\r\nHost: ${target.host}\r\n` +
        `Content-Type: ${PDF}\r\nContent-Length: ${bytes.length}\r\nIf-None-Match: *\r\n\r\n`,
    );
    socket.write(bytes.subarray(0, bytes.length / 2));
    // Half the body is in: the upload is in progress and must not be visible.
    await waitFor(async () => (uploadsInProgress() > 0 ? true : undefined), 5000, "upload started");
    expect((await download(o.caseId, s.uploadId)).statusCode).toBe(404);
    const early = await answerRfi(h.app, o.partner, o.caseId, o.rfiId, {
      documents: [{ uploadId: s.uploadId }],
    });
    expect(early.statusCode).toBe(422);
    expect(early.json()).toMatchObject({ error: "document_not_uploaded", uploadId: s.uploadId });
    socket.destroy();
    await waitFor(async () => (uploadsInProgress() === 0 ? true : undefined), 5000, "parts cleaned");
    expect((await download(o.caseId, s.uploadId)).statusCode).toBe(404);

    const retry = await socketPut(originOf(s.uploadUrl), s.uploadUrl, bytes, pinned(bytes));
    expect(retry.status).toBe(200);
    const done = await answerRfi(h.app, o.partner, o.caseId, o.rfiId, {
      documents: [{ uploadId: s.uploadId }],
    });
    expect(done.statusCode).toBe(200);
  });

  // The disk store signs its own URLs; a bucket's presigned URLs are every process's alike.
  it.skipIf(s3)(
    "accepts a URL minted by another process of the service (one signing key for all)",
    async () => {
      const o = await openRequest();
      const bytes = Buffer.from("%PDF-shared");
      const s = await slot(o, bytes);
      // A second process: its own blob store instance, which loads the key from the database.
      const other = await buildCheckedApp({ ...h.ctx, blobs: createBlobStore(h.ctx.config) });
      try {
        expect((await injectPut(other, s.uploadUrl, bytes)).statusCode).toBe(200);
      } finally {
        await other.close();
      }
    },
  );
});

describe("GET /admin/cases/{caseId}/documents/{uploadId}", () => {
  it("answers 401 without or with a wrong operator token", async () => {
    const o = await openRequest();
    const uploadId = await uploadDocument(h.app, o.partner, o.caseId, o.rfiId);
    expect((await download(o.caseId, uploadId, {})).statusCode).toBe(401);
    expect(
      (await download(o.caseId, uploadId, { authorization: "Bearer wrong-token-0123456789" })).statusCode,
    ).toBe(401);
  });

  it("answers 404 for an unknown case or upload, an upload of another case, and a slot never uploaded", async () => {
    const o = await openRequest();
    const uploadId = await uploadDocument(h.app, o.partner, o.caseId, o.rfiId);
    const otherCase = await createStoredCase(h.ctx, o.partner.tenantId);
    const empty = (await mint(o)).json().uploadId;
    for (const [caseId, id] of [
      [crypto.randomUUID(), uploadId],
      [o.caseId, crypto.randomUUID()],
      [o.caseId, "nope"],
      [otherCase, uploadId],
      [o.caseId, empty],
    ] as const) {
      const res = await download(caseId, id);
      expect(res.statusCode, `${caseId} ${id}`).toBe(404);
      expect(res.json().error).toBe("not_found");
    }
  });

  it("names a non-ASCII file safely in Content-Disposition", async () => {
    const o = await openRequest();
    const bytes = Buffer.from("%PDF-");
    const s = (await mint(o, { filename: 'Relevé "mai".pdf', sizeBytes: bytes.length })).json();
    await injectPut(h.app, s.uploadUrl, bytes);
    const res = await download(o.caseId, s.uploadId);
    expect(res.headers["content-disposition"]).toBe(
      `attachment; filename="Relev_ _mai_.pdf"; filename*=UTF-8''Relev%C3%A9%20%22mai%22.pdf`,
    );
  });
});
