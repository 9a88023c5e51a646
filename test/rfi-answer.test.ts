import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { App } from "../src/platform/app-types.js";
import { buildCheckedApp, createTestApp, type TestApp } from "./support/app.js";
import { adminHeaders, createStoredCase, type Partner } from "./support/fixtures.js";
import {
  answerRfi,
  eventsOf,
  injectPut,
  mintSlot,
  type OpenRequest,
  openRequest as openRequestFor,
  raiseRfi,
  setCase,
  uploadDocument,
  waitUntilPast,
} from "./support/rfi.js";
import { securityTests } from "./support/security.js";

let h: TestApp;
beforeAll(async () => {
  h = await createTestApp();
});
afterAll(async () => {
  await h.close();
});

const openRequest = (partner?: Partner) => openRequestFor(h.app, h.ctx, partner);

function answer(o: OpenRequest, payload: unknown) {
  return answerRfi(h.app, o.partner, o.caseId, o.rfiId, payload);
}

async function status(o: OpenRequest): Promise<string> {
  const res = await h.app.inject({
    method: "GET",
    url: `/cases/${o.caseId}/rfi/${o.rfiId}`,
    headers: o.partner.headers,
  });
  return res.json().status;
}

const field = (key: string, value: unknown = "x") => ({ key, value });

describe("POST /cases/{caseId}/rfi/{rfiId}/response", () => {
  securityTests(() => h, {
    scope: "cases:write",
    async request(harness, owner) {
      const caseId = await createStoredCase(harness.ctx, owner.tenantId);
      const { rfiId } = await raiseRfi(harness.app, owner, caseId);
      return {
        method: "POST",
        url: `/cases/${caseId}/rfi/${rfiId}/response`,
        payload: { fields: [field("ok")] },
      };
    },
  });

  it("answers 200 with the counts, records the answer in order, and emits case.rfi_answered", async () => {
    const o = await openRequest();
    const doc = await uploadDocument(h.app, o.partner, o.caseId, o.rfiId, Buffer.from("%PDF-1.7 bill"));
    const res = await answer(o, {
      fields: [
        { key: "iban", value: "DE89 3704 0044 0532 0130 00", label: "IBAN" },
        { key: "monthly_income", value: 4200.5 },
        { key: "is_pep", value: false },
        { key: "notes" },
      ],
      documents: [{ uploadId: doc, label: "Utility bill" }],
      tenantId: "00000000-0000-4000-8000-000000000000",
    });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toEqual({
      rfiId: o.rfiId,
      status: "answered",
      answeredAt: expect.any(String),
      fieldCount: 4,
      documentCount: 1,
    });
    expect(new Date(body.answeredAt).toISOString()).toBe(body.answeredAt);

    const view = (
      await h.app.inject({
        method: "GET",
        url: `/cases/${o.caseId}/rfi/${o.rfiId}`,
        headers: o.partner.headers,
      })
    ).json();
    expect(view.status).toBe("answered");
    expect(view.answer).toEqual({
      answeredAt: body.answeredAt,
      answeredBy: `apikey:${o.partner.keyId}`,
      source: "rfi_response",
      fields: [
        { key: "iban", value: "DE89 3704 0044 0532 0130 00", label: "IBAN" },
        { key: "monthly_income", value: 4200.5, label: null },
        { key: "is_pep", value: false, label: null },
        { key: "notes", value: null, label: null },
      ],
      documents: [
        {
          uploadId: doc,
          filename: "statement.pdf",
          contentType: "application/pdf",
          sizeBytes: 13,
          label: "Utility bill",
          attachedAt: body.answeredAt,
        },
      ],
    });

    const events = await eventsOf(h.ctx, o.caseId, "case.rfi_answered");
    expect(events).toHaveLength(1);
    expect(events[0]?.payload).toEqual({
      event_type: "case.rfi_answered",
      tenant_id: o.partner.tenantId,
      case_id: o.caseId,
      rfi_id: o.rfiId,
      source: "rfi_response",
      answered_by: `apikey:${o.partner.keyId}`,
      field_count: 4,
      document_count: 1,
      timestamp: body.answeredAt,
    });
  });

  it("accepts an answer of documents only", async () => {
    const o = await openRequest();
    const doc = await uploadDocument(h.app, o.partner, o.caseId, o.rfiId);
    const res = await answer(o, { documents: [{ uploadId: doc }] });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ fieldCount: 0, documentCount: 1 });
  });

  describe("400 invalid_request", () => {
    it("for a body that is not valid JSON", async () => {
      const o = await openRequest();
      const res = await answer(o, '{"fields": [');
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: "invalid_request", message: "request body is not valid JSON" });
    });

    it("for an empty documents[].uploadId", async () => {
      const o = await openRequest();
      const res = await answer(o, { documents: [{ uploadId: "" }] });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({
        error: "invalid_request",
        message: "documents[0].uploadId must not be empty",
      });
    });

    it("for the same uploadId twice in one submission", async () => {
      const o = await openRequest();
      const doc = await uploadDocument(h.app, o.partner, o.caseId, o.rfiId);
      const res = await answer(o, { documents: [{ uploadId: doc }, { uploadId: doc.toUpperCase() }] });
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toBe("invalid_request");
      expect(res.json().message).toMatch(/documents\[1\]\.uploadId repeats documents\[0\]/);
      expect(await status(o)).toBe("pending");
    });

    it("for a document label of 257 bytes, and accepts one of 256 bytes", async () => {
      const o = await openRequest();
      const doc = await uploadDocument(h.app, o.partner, o.caseId, o.rfiId);
      const over = await answer(o, { documents: [{ uploadId: doc, label: `${"é".repeat(128)}a` }] });
      expect(over.statusCode).toBe(400);
      expect(over.json()).toEqual({
        error: "invalid_request",
        message: "documents[0].label is longer than 256 bytes",
      });
      const at = await answer(o, { documents: [{ uploadId: doc, label: "é".repeat(128) }] });
      expect(at.statusCode).toBe(200);
    });

    it("for neither a field nor a document", async () => {
      const o = await openRequest();
      for (const body of [{}, { fields: [], documents: [] }]) {
        const res = await answer(o, body);
        expect(res.statusCode).toBe(400);
        expect(res.json()).toEqual({
          error: "invalid_request",
          message: "an answer needs at least one field or one document",
        });
      }
    });

    it("for a body of the wrong shape, naming the part", async () => {
      const o = await openRequest();
      const cases: Array<[unknown, RegExp]> = [
        [[], /JSON object/],
        [null, /JSON object/],
        [{ fields: {} }, /fields must be an array/],
        [{ documents: "x" }, /documents must be an array/],
        [{ fields: ["x"] }, /fields\[0\] must be an object/],
        [{ fields: [{ value: 1 }] }, /fields\[0\]\.key is required/],
        [{ fields: [{ key: "a", label: 3 }] }, /fields\[0\]\.label must be a string/],
        [{ documents: [{}] }, /documents\[0\]\.uploadId is required/],
        [{ documents: [{ uploadId: "not-a-uuid" }] }, /documents\[0\]\.uploadId must be a UUID/],
      ];
      for (const [body, message] of cases) {
        const res = await answer(o, body);
        expect(res.statusCode, JSON.stringify(body)).toBe(400);
        expect(res.json().error).toBe("invalid_request");
        expect(res.json().message).toMatch(message);
      }
      expect(await status(o)).toBe("pending");
    });
  });

  describe("404", () => {
    it("for an unknown or malformed case or request, and a request of another case", async () => {
      const o = await openRequest();
      const otherCase = await createStoredCase(h.ctx, o.partner.tenantId);
      const unknown = "00000000-0000-4000-8000-000000000000";
      for (const [caseId, rfiId, message] of [
        [unknown, o.rfiId, "case not found"],
        ["nope", o.rfiId, "case not found"],
        [o.caseId, unknown, "information request not found"],
        [o.caseId, "nope", "information request not found"],
        [otherCase, o.rfiId, "information request not found"],
      ] as const) {
        const res = await answerRfi(h.app, o.partner, caseId, rfiId, { fields: [field("a")] });
        expect(res.statusCode).toBe(404);
        expect(res.json()).toEqual({ error: "not_found", message });
      }
    });
  });

  describe("409", () => {
    it("already_answered carries the answering key and answeredAt, so a retry recognises its own answer", async () => {
      const o = await openRequest();
      const first = await answer(o, { fields: [field("a")] });
      expect(first.statusCode).toBe(200);
      const again = await answer(o, { fields: [field("a")] });
      expect(again.statusCode).toBe(409);
      expect(again.json()).toEqual({
        error: "already_answered",
        answeredBy: `apikey:${o.partner.keyId}`,
        answeredAt: first.json().answeredAt,
        message: "the information request has already been answered",
      });
    });

    it("already_answered says `analyst` when an analyst answered through the operator API", async () => {
      const o = await openRequest();
      const byAnalyst = await h.app.inject({
        method: "POST",
        url: `/admin/cases/${o.caseId}/rfi/${o.rfiId}/answer`,
        headers: adminHeaders,
        payload: { actor: "jane.doe", fields: [field("verified_by_phone", true)] },
      });
      expect(byAnalyst.statusCode).toBe(200);
      const res = await answer(o, { fields: [field("a")] });
      expect(res.statusCode).toBe(409);
      expect(res.json()).toMatchObject({
        error: "already_answered",
        answeredBy: "analyst",
        answeredAt: byAnalyst.json().answeredAt,
      });
    });

    it("not_pending for a cancelled request and for one past its deadline", async () => {
      const o = await openRequest();
      await h.app.inject({
        method: "POST",
        url: `/admin/cases/${o.caseId}/rfi/${o.rfiId}/cancel`,
        headers: adminHeaders,
      });
      const cancelled = await answer(o, { fields: [field("a")] });
      expect(cancelled.statusCode).toBe(409);
      expect(cancelled.json()).toEqual({
        error: "not_pending",
        message: "the information request is cancelled, not pending",
      });

      const caseId = await createStoredCase(h.ctx, o.partner.tenantId);
      const expiresAt = new Date(Date.now() + 1000).toISOString();
      const { rfiId } = await raiseRfi(h.app, o.partner, caseId, { expiresAt });
      await waitUntilPast(expiresAt);
      // No worker runs here: the deadline alone closes the request to answers.
      const late = await answerRfi(h.app, o.partner, caseId, rfiId, { fields: [field("a")] });
      expect(late.statusCode).toBe(409);
      expect(late.json().error).toBe("not_pending");
      expect(late.json().message).toMatch(/expired at/);
    });

    it("case_terminal for a failed or closed case, and dry_run for a dry-run case", async () => {
      for (const [change, code] of [
        [{ status: "failed" }, "case_terminal"],
        [{ status: "closed" }, "case_terminal"],
        [{ dryRun: true }, "dry_run"],
        [{ dryRun: true, status: "closed" }, "dry_run"],
      ] as const) {
        const o = await openRequest();
        await setCase(h.ctx, o.caseId, change);
        const res = await answer(o, { fields: [field("a")] });
        expect(res.statusCode).toBe(409);
        expect(res.json().error).toBe(code);
      }
    });

    it("comes before any check of the body", async () => {
      const o = await openRequest();
      await answer(o, { fields: [field("a")] });
      for (const body of [{}, { fields: "x" }, { fields: [{ key: "1bad" }] }]) {
        const res = await answer(o, body);
        expect(res.statusCode).toBe(409);
        expect(res.json().error).toBe("already_answered");
      }
    });
  });

  describe("422 on fields", () => {
    it("invalid_field_key for a malformed key, with the key", async () => {
      const o = await openRequest();
      for (const key of ["1st", "has-dash", "", "spa ce", "ünï"]) {
        const res = await answer(o, { fields: [field("ok"), field(key)] });
        expect(res.statusCode, key).toBe(422);
        expect(res.json()).toMatchObject({ error: "invalid_field_key", key });
      }
    });

    it("invalid_field_key for a repeated key, never last-one-wins", async () => {
      const o = await openRequest();
      const res = await answer(o, { fields: [field("a", 1), field("b"), field("a", 2)] });
      expect(res.statusCode).toBe(422);
      expect(res.json()).toMatchObject({ error: "invalid_field_key", key: "a" });
      expect(res.json().message).toMatch(/fields\[2\]/);
      expect(await status(o)).toBe("pending");
    });

    it("invalid_field_value for an object or an array, with the key", async () => {
      const o = await openRequest();
      for (const value of [{ a: 1 }, [1, 2]]) {
        const res = await answer(o, { fields: [field("address", value)] });
        expect(res.statusCode).toBe(422);
        expect(res.json()).toMatchObject({ error: "invalid_field_value", key: "address" });
      }
    });

    it("accepts a value of 4096 bytes as UTF-8 JSON and refuses 4097 with invalid_field_value", async () => {
      const o = await openRequest();
      // A string's JSON has its two quotes: 4094 bytes of text are 4096 bytes of JSON.
      const over = await answer(o, { fields: [field("essay", "a".repeat(4095))] });
      expect(over.statusCode).toBe(422);
      expect(over.json()).toMatchObject({ error: "invalid_field_value", key: "essay" });
      const multiByte = await answer(o, { fields: [field("essay", "€".repeat(1365))] });
      expect(multiByte.statusCode).toBe(422);
      const at = await answer(o, { fields: [field("essay", "a".repeat(4094))] });
      expect(at.statusCode).toBe(200);
    });

    it("accepts 100 fields and refuses 101 with fields_too_large", async () => {
      const o = await openRequest();
      const fields = (n: number) => Array.from({ length: n }, (_, i) => field(`f${i}`, i));
      const over = await answer(o, { fields: fields(101) });
      expect(over.statusCode).toBe(422);
      expect(over.json().error).toBe("fields_too_large");
      const at = await answer(o, { fields: fields(100) });
      expect(at.statusCode).toBe(200);
      expect(at.json().fieldCount).toBe(100);
    });

    it("accepts a field label of 256 bytes and refuses 257 with fields_too_large", async () => {
      const o = await openRequest();
      const over = await answer(o, { fields: [{ key: "a", value: 1, label: "l".repeat(257) }] });
      expect(over.statusCode).toBe(422);
      expect(over.json().error).toBe("fields_too_large");
      expect(over.json().message).toMatch(/fields\[0\]\.label/);
      const at = await answer(o, { fields: [{ key: "a", value: 1, label: "l".repeat(256) }] });
      expect(at.statusCode).toBe(200);
    });

    it("accepts 16384 bytes of keys, values and labels, and refuses 16385 with fields_too_large", async () => {
      // Four fields "k0".."k3" (2 bytes each) with 4096-byte values: 16392 bytes, so trim the last.
      const fields = (lastValueBytes: number) =>
        [4096, 4096, 4096, lastValueBytes].map((bytes, i) => field(`k${i}`, "v".repeat(bytes - 2)));
      const o = await openRequest();
      const over = await answer(o, { fields: fields(4096 - 8 + 1) });
      expect(over.statusCode).toBe(422);
      expect(over.json().error).toBe("fields_too_large");
      expect(over.json().message).toMatch(/16385 bytes/);
      const at = await answer(o, { fields: fields(4096 - 8) });
      expect(at.statusCode).toBe(200);
    });

    it("comes after the body's structure and before too_many_documents", async () => {
      const o = await openRequest();
      const eleven = Array.from({ length: 11 }, () => ({ uploadId: crypto.randomUUID() }));
      const structural = await answer(o, { fields: [field("1bad")], documents: [{ uploadId: "" }] });
      expect(structural.statusCode).toBe(400);
      const fieldsFirst = await answer(o, { fields: [field("1bad")], documents: eleven });
      expect(fieldsFirst.json().error).toBe("invalid_field_key");
    });
  });

  describe("422 on documents", () => {
    it("accepts 10 documents and refuses 11 with too_many_documents, before checking any upload", async () => {
      const o = await openRequest();
      const docs = [];
      for (let i = 0; i < 11; i++) docs.push(await uploadDocument(h.app, o.partner, o.caseId, o.rfiId));
      const unknown = crypto.randomUUID();
      const over = await answer(o, {
        documents: [...docs.slice(0, 10), unknown].map((uploadId) => ({ uploadId })),
      });
      expect(over.statusCode).toBe(422);
      expect(over.json()).toEqual({
        error: "too_many_documents",
        message: "an answer attaches at most 10 documents; this one has 11",
      });
      const at = await answer(o, { documents: docs.slice(0, 10).map((uploadId) => ({ uploadId })) });
      expect(at.statusCode).toBe(200);
      expect(at.json().documentCount).toBe(10);
    });

    it("document_not_uploaded for a minted slot never uploaded fails the whole answer, recording nothing", async () => {
      const o = await openRequest();
      const uploaded = await uploadDocument(h.app, o.partner, o.caseId, o.rfiId);
      const neverUploaded = (await mintSlot(h.app, o.partner, o.caseId, o.rfiId)).json().uploadId;
      const res = await answer(o, {
        fields: [field("a")],
        documents: [{ uploadId: uploaded }, { uploadId: neverUploaded }],
      });
      expect(res.statusCode).toBe(422);
      expect(res.json()).toEqual({
        error: "document_not_uploaded",
        uploadId: neverUploaded,
        message:
          "documents[1]: nothing has been uploaded to this slot yet; PUT the file to its uploadUrl first",
      });
      expect(await status(o)).toBe("pending");
      expect(await eventsOf(h.ctx, o.caseId, "case.rfi_answered")).toHaveLength(0);
      const attached = await h.ctx.db.root
        .selectFrom("rfi_upload_slots")
        .select("id")
        .where("rfi_id", "=", o.rfiId)
        .where("attached_at", "is not", null)
        .execute();
      expect(attached).toEqual([]);
      // The uploaded document is still free to attach.
      expect((await answer(o, { documents: [{ uploadId: uploaded }] })).statusCode).toBe(200);
    });

    it("document_not_uploaded for a slot of another request, of another tenant, or never minted", async () => {
      const o = await openRequest();
      const { rfiId: otherRfi } = await raiseRfi(h.app, o.partner, o.caseId);
      const foreign = await uploadDocument(h.app, o.partner, o.caseId, otherRfi);
      const stranger = await openRequest();
      const strangers = await uploadDocument(h.app, stranger.partner, stranger.caseId, stranger.rfiId);
      const res = await answer(o, { documents: [{ uploadId: foreign }] });
      expect(res.statusCode).toBe(422);
      expect(res.json()).toMatchObject({ error: "document_not_uploaded", uploadId: foreign });
      expect(res.json().message).toMatch(/another information request/);
      for (const uploadId of [strangers, crypto.randomUUID()]) {
        const r = await answer(o, { documents: [{ uploadId }] });
        expect(r.statusCode).toBe(422);
        expect(r.json()).toMatchObject({ error: "document_not_uploaded", uploadId });
        expect(r.json().message).toMatch(/no upload slot with this id/);
      }
    });

    it("document_not_uploaded for an expired slot, even when its object was stored", async () => {
      const shortLived: App = await buildCheckedApp({
        ...h.ctx,
        config: { ...h.ctx.config, uploadTtlSeconds: 1 },
      });
      try {
        const o = await openRequest();
        const minted = (await mintSlot(shortLived, o.partner, o.caseId, o.rfiId)).json();
        expect((await injectPut(shortLived, minted.uploadUrl, Buffer.from("%PDF-"))).statusCode).toBe(200);
        await waitUntilPast(minted.expiresAt);
        const res = await answer(o, { documents: [{ uploadId: minted.uploadId }] });
        expect(res.statusCode).toBe(422);
        expect(res.json()).toMatchObject({ error: "document_not_uploaded", uploadId: minted.uploadId });
        expect(res.json().message).toMatch(/expired at .*mint a new slot/);
      } finally {
        await shortLived.close();
      }
    });
  });

  it("gives exactly one 200 to concurrent answers; the others are 409 already_answered", async () => {
    const o = await openRequest();
    const doc = await uploadDocument(h.app, o.partner, o.caseId, o.rfiId);
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        answer(o, { fields: [field("attempt", i)], documents: [{ uploadId: doc }] }),
      ),
    );
    const ok = answers.filter((r) => r.statusCode === 200);
    expect(ok).toHaveLength(1);
    const conflicts = answers.filter((r) => r.statusCode === 409);
    expect(conflicts).toHaveLength(7);
    for (const c of conflicts) {
      expect(c.json()).toMatchObject({ error: "already_answered", answeredAt: ok[0]?.json().answeredAt });
    }
    expect(await eventsOf(h.ctx, o.caseId, "case.rfi_answered")).toHaveLength(1);
  });
});

describe("POST /admin/cases/{caseId}/rfi/{rfiId}/answer", () => {
  it("records the analyst's answer with answered_by analyst:<actor> and source analyst", async () => {
    const o = await openRequest();
    const doc = await uploadDocument(h.app, o.partner, o.caseId, o.rfiId);
    const res = await h.app.inject({
      method: "POST",
      url: `/admin/cases/${o.caseId}/rfi/${o.rfiId}/answer`,
      headers: adminHeaders,
      payload: {
        actor: "jane.doe",
        fields: [field("called_customer", true)],
        documents: [{ uploadId: doc }],
      },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ rfiId: o.rfiId, status: "answered", fieldCount: 1, documentCount: 1 });
    const [event] = await eventsOf(h.ctx, o.caseId, "case.rfi_answered");
    expect(event?.payload).toMatchObject({ source: "analyst", answered_by: "analyst:jane.doe" });
    const view = (
      await h.app.inject({
        method: "GET",
        url: `/cases/${o.caseId}/rfi/${o.rfiId}`,
        headers: o.partner.headers,
      })
    ).json();
    expect(view.answer).toMatchObject({ answeredBy: "analyst:jane.doe", source: "analyst" });
  });

  it("answers 400 without an actor, 404 for an unknown case, and 401 without the operator token", async () => {
    const o = await openRequest();
    const url = `/admin/cases/${o.caseId}/rfi/${o.rfiId}/answer`;
    const noActor = await h.app.inject({
      method: "POST",
      url,
      headers: adminHeaders,
      payload: { fields: [field("a")] },
    });
    expect(noActor.statusCode).toBe(400);
    expect(noActor.json().message).toMatch(/actor/);
    const unknown = await h.app.inject({
      method: "POST",
      url: `/admin/cases/${crypto.randomUUID()}/rfi/${o.rfiId}/answer`,
      headers: adminHeaders,
      payload: { actor: "a", fields: [field("a")] },
    });
    expect(unknown.statusCode).toBe(404);
    for (const headers of [{}, { authorization: "Bearer wrong-token-0123456789" }]) {
      const res = await h.app.inject({
        method: "POST",
        url,
        headers,
        payload: { actor: "a", fields: [field("a")] },
      });
      expect(res.statusCode).toBe(401);
    }
    expect(await status(o)).toBe("pending");
  });
});
