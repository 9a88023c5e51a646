import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "./support/app.js";
import { createPartner, createStoredCase, enableTags, type Partner } from "./support/fixtures.js";

/** Contract section 2, "Tags": a case carries at most 100 tags; one more is 409 `tag_limit_reached`. */

let h: TestApp;
let partner: Partner;
const TAGS = Array.from({ length: 102 }, (_, i) => `t${i}`);

beforeAll(async () => {
  h = await createTestApp();
  partner = await createPartner(h.app);
  await enableTags(h.app, partner.tenantId, ...TAGS);
});
afterAll(async () => h?.close());

function tag(caseId: string, value: string) {
  return h.app.inject({
    method: "POST",
    url: `/cases/${caseId}/tags`,
    headers: partner.headers,
    payload: { tag: value },
  });
}

describe("the per-case tag cap", () => {
  it("accepts 100 tags, refuses the 101st with 409 tag_limit_reached, and still answers 200 for one applied", async () => {
    const caseId = await createStoredCase(h.ctx, partner.tenantId);
    for (const t of TAGS.slice(0, 100)) expect((await tag(caseId, t)).statusCode).toBe(201);
    const over = await tag(caseId, "t100");
    expect(over.statusCode, over.body).toBe(409);
    expect(over.json()).toMatchObject({
      code: "tag_limit_reached",
      error: expect.stringMatching(/100 tags/),
    });
    expect((await tag(caseId, "t5")).statusCode).toBe(200);
    const list = await h.app.inject({
      method: "GET",
      url: `/cases/${caseId}/tags`,
      headers: partner.headers,
    });
    expect(list.json().tags).toHaveLength(100);

    const removed = await h.app.inject({
      method: "DELETE",
      url: `/cases/${caseId}/tags?tag=t0`,
      headers: partner.headers,
    });
    expect(removed.statusCode).toBe(204);
    expect((await tag(caseId, "t100")).statusCode).toBe(201);
  });

  it("a tag that is not an option stays 400 on a full case", async () => {
    const caseId = await createStoredCase(h.ctx, partner.tenantId);
    for (const t of TAGS.slice(0, 100)) await tag(caseId, t);
    expect((await tag(caseId, "not-an-option")).statusCode).toBe(400);
  });

  it("concurrent adds past the cap leave exactly 100 tags", async () => {
    const caseId = await createStoredCase(h.ctx, partner.tenantId);
    for (const t of TAGS.slice(0, 95)) await tag(caseId, t);
    const answers = await Promise.all(TAGS.slice(95).map((t) => tag(caseId, t)));
    expect(answers.map((a) => a.statusCode).sort()).toEqual([201, 201, 201, 201, 201, 409, 409]);
    const count = await h.ctx.db.root
      .selectFrom("case_tags")
      .select((eb) => eb.fn.countAll<string>().as("n"))
      .where("case_id", "=", caseId)
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(100);
  });
});
