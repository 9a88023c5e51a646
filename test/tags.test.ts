import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "./support/app.js";
import {
  adminHeaders,
  createKey,
  createPartner,
  createStoredCase,
  enableTags,
  type Partner,
} from "./support/fixtures.js";
import { securityTests } from "./support/security.js";

let h: TestApp;
beforeAll(async () => {
  h = await createTestApp();
});
afterAll(async () => {
  await h.close();
});

async function partnerWithCase(...tags: string[]): Promise<{ partner: Partner; caseId: string }> {
  const partner = await createPartner(h.app);
  await enableTags(h.app, partner.tenantId, ...tags);
  return { partner, caseId: await createStoredCase(h.ctx, partner.tenantId) };
}

function tagsOf(partner: Partner, caseId: string) {
  return h.app.inject({ method: "GET", url: `/cases/${caseId}/tags`, headers: partner.headers });
}

function addTag(partner: Partner, caseId: string, tag: unknown) {
  return h.app.inject({
    method: "POST",
    url: `/cases/${caseId}/tags`,
    headers: partner.headers,
    payload: { tag },
  });
}

describe("GET /cases/{caseId}/tags", () => {
  securityTests(() => h, {
    scope: "tags:read",
    async request(harness, owner) {
      const caseId = await createStoredCase(harness.ctx, owner.tenantId);
      return { method: "GET", url: `/cases/${caseId}/tags` };
    },
  });

  it("lists tags oldest first with their attribution", async () => {
    const { partner, caseId } = await partnerWithCase("vip", "fraud-ring", "manual-check");
    for (const tag of ["fraud-ring", "vip", "manual-check"])
      expect((await addTag(partner, caseId, tag)).statusCode).toBe(201);
    const res = await tagsOf(partner, caseId);
    expect(res.statusCode).toBe(200);
    const tags = res.json().tags;
    expect(tags.map((t: { tag: string }) => t.tag)).toEqual(["fraud-ring", "vip", "manual-check"]);
    for (const t of tags) {
      expect(t.createdBy).toBe(`apikey:${partner.keyId}`);
      expect(new Date(t.createdAt).toISOString()).toBe(t.createdAt);
    }
  });

  it("answers 404 for an unknown or malformed case id", async () => {
    const partner = await createPartner(h.app);
    for (const id of ["00000000-0000-4000-8000-000000000000", "not-a-uuid"]) {
      const res = await tagsOf(partner, id);
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ error: "case not found", code: "not_found" });
    }
  });
});

describe("POST /cases/{caseId}/tags", () => {
  securityTests(() => h, {
    scope: "tags:write",
    async request(harness, owner) {
      await enableTags(harness.app, owner.tenantId, "vip");
      const caseId = await createStoredCase(harness.ctx, owner.tenantId);
      return { method: "POST", url: `/cases/${caseId}/tags`, payload: { tag: "vip" } };
    },
  });

  it("answers 201 for a new tag and 200 with the original createdBy and createdAt when repeated", async () => {
    const { partner, caseId } = await partnerWithCase("vip");
    const first = await addTag(partner, caseId, "vip");
    expect(first.statusCode).toBe(201);
    expect(first.json()).toMatchObject({ tag: "vip", createdBy: `apikey:${partner.keyId}` });
    const otherKey = await createKey(h.app, partner.tenantId, ["tags:write", "tags:read"]);
    const again = await addTag(otherKey, caseId, "vip");
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual(first.json());
    expect((await tagsOf(partner, caseId)).json().tags).toHaveLength(1);
  });

  it("answers 400 for a tag outside the tenant's vocabulary", async () => {
    const { partner, caseId } = await partnerWithCase("vip");
    const res = await addTag(partner, caseId, "unknown-tag");
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatch(/not an enabled option/);
  });

  it("answers 400 for a disabled option, and keeps tags already applied", async () => {
    const { partner, caseId } = await partnerWithCase("vip", "watch");
    expect((await addTag(partner, caseId, "vip")).statusCode).toBe(201);
    for (const tag of ["vip", "watch"]) {
      const res = await h.app.inject({
        method: "PUT",
        url: `/admin/tenants/${partner.tenantId}/tag-options/${tag}`,
        headers: adminHeaders,
        payload: { enabled: false },
      });
      expect(res.json()).toMatchObject({ tag, enabled: false });
    }
    expect((await addTag(partner, caseId, "watch")).statusCode).toBe(400);
    expect((await addTag(partner, caseId, "vip")).statusCode).toBe(200);
    expect((await tagsOf(partner, caseId)).json().tags.map((t: { tag: string }) => t.tag)).toEqual(["vip"]);
  });

  it("accepts a tag of 64 characters and refuses one of 65 with 400", async () => {
    const at = "t".repeat(64);
    const over = "t".repeat(65);
    const { partner, caseId } = await partnerWithCase(at);
    expect((await addTag(partner, caseId, at)).statusCode).toBe(201);
    const res = await addTag(partner, caseId, over);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatch(/tag/);
  });

  it("answers 400 for a missing or non-string tag and for malformed JSON", async () => {
    const { partner, caseId } = await partnerWithCase("vip");
    expect((await addTag(partner, caseId, 42)).statusCode).toBe(400);
    const missing = await h.app.inject({
      method: "POST",
      url: `/cases/${caseId}/tags`,
      headers: partner.headers,
      payload: {},
    });
    expect(missing.statusCode).toBe(400);
    const malformed = await h.app.inject({
      method: "POST",
      url: `/cases/${caseId}/tags`,
      headers: { ...partner.headers, "content-type": "application/json" },
      payload: '{"tag": "vip"',
    });
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json()).toEqual({ error: "request body is not valid JSON", code: "invalid_request" });
  });

  it("answers 404 for an unknown case", async () => {
    const { partner } = await partnerWithCase("vip");
    const res = await addTag(partner, "00000000-0000-4000-8000-000000000000", "vip");
    expect(res.statusCode).toBe(404);
  });

  it("creates the tag once when the same tag is applied concurrently", async () => {
    const { partner, caseId } = await partnerWithCase("vip");
    const answers = await Promise.all(Array.from({ length: 10 }, () => addTag(partner, caseId, "vip")));
    expect(answers.filter((r) => r.statusCode === 201)).toHaveLength(1);
    expect(answers.filter((r) => r.statusCode === 200)).toHaveLength(9);
    expect(new Set(answers.map((r) => r.body)).size).toBe(1);
  });
});

describe("DELETE /cases/{caseId}/tags", () => {
  securityTests(() => h, {
    scope: "tags:write",
    async request(harness, owner) {
      const caseId = await createStoredCase(harness.ctx, owner.tenantId);
      return { method: "DELETE", url: `/cases/${caseId}/tags?tag=vip` };
    },
  });

  it("removes a tag named in the query, and answers 204 again when it is gone", async () => {
    const { partner, caseId } = await partnerWithCase("vip", "watch");
    await addTag(partner, caseId, "vip");
    await addTag(partner, caseId, "watch");
    for (let i = 0; i < 2; i++) {
      const res = await h.app.inject({
        method: "DELETE",
        url: `/cases/${caseId}/tags?tag=vip`,
        headers: partner.headers,
      });
      expect(res.statusCode).toBe(204);
      expect(res.body).toBe("");
    }
    expect((await tagsOf(partner, caseId)).json().tags.map((t: { tag: string }) => t.tag)).toEqual(["watch"]);
  });

  it("accepts the tag in a JSON body", async () => {
    const { partner, caseId } = await partnerWithCase("vip");
    await addTag(partner, caseId, "vip");
    const res = await h.app.inject({
      method: "DELETE",
      url: `/cases/${caseId}/tags`,
      headers: partner.headers,
      payload: { tag: "vip" },
    });
    expect(res.statusCode).toBe(204);
    expect((await tagsOf(partner, caseId)).json().tags).toEqual([]);
  });

  it("answers 400 when no tag is named and 404 for an unknown case", async () => {
    const { partner, caseId } = await partnerWithCase("vip");
    const missing = await h.app.inject({
      method: "DELETE",
      url: `/cases/${caseId}/tags`,
      headers: partner.headers,
    });
    expect(missing.statusCode).toBe(400);
    const unknown = await h.app.inject({
      method: "DELETE",
      url: "/cases/00000000-0000-4000-8000-000000000000/tags?tag=vip",
      headers: partner.headers,
    });
    expect(unknown.statusCode).toBe(404);
  });

  it("lets a re-applied tag carry its new attribution", async () => {
    const { partner, caseId } = await partnerWithCase("vip");
    const first = (await addTag(partner, caseId, "vip")).json();
    await h.app.inject({ method: "DELETE", url: `/cases/${caseId}/tags?tag=vip`, headers: partner.headers });
    const other = await createKey(h.app, partner.tenantId, ["tags:write"]);
    const again = await addTag(other, caseId, "vip");
    expect(again.statusCode).toBe(201);
    expect(again.json().createdBy).toBe(`apikey:${other.keyId}`);
    expect(again.json().createdBy).not.toBe(first.createdBy);
  });
});
