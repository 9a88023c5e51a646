import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SCAN_LIMIT } from "../src/modules/cases/index.js";
import { createTestApp, type TestApp } from "./support/app.js";
import { ConsoleClient, signedIn } from "./support/console.js";
import { createPartner, createStoredCase, enableTags, type Partner } from "./support/fixtures.js";
import { injectPut, raiseRfi } from "./support/rfi.js";
import {
  amountScreen,
  createWorkflow,
  riskScore,
  transactionSubject,
  waitForCase,
} from "./support/workflows.js";

let h: TestApp;

beforeAll(async () => {
  h = await createTestApp();
  await h.startWorker();
});

afterAll(async () => {
  await h.close();
});

/** A partner whose workflow sends amounts over 1000 to review, and one such case of theirs. */
async function caseInReview(partner?: Partner, amount = 5000): Promise<{ partner: Partner; caseId: string }> {
  const p = partner ?? (await createPartner(h.app));
  if (!partner) await createWorkflow(h.app, p.tenantId, "tx", amountScreen);
  const res = await h.app.inject({
    method: "POST",
    url: "/cases",
    headers: p.headers,
    payload: {
      workflowId: "tx",
      type: "Transaction",
      eventTimestamp: new Date().toISOString(),
      payload: { amount },
      subject: { ...transactionSubject, displayName: `Payment of ${amount}` },
    },
  });
  expect(res.statusCode, res.body).toBe(201);
  const caseId = res.json().caseId as string;
  await waitForCase(h.app, p.headers, caseId);
  return { partner: p, caseId };
}

describe("the review queue", () => {
  it("without a session sends the browser to the sign-in page, remembering where it was going", async () => {
    for (const url of [
      "/console/queue",
      "/console/cases/00000000-0000-4000-8000-000000000000",
      "/console/audit",
    ]) {
      const res = await new ConsoleClient(h.app).get(url);
      expect(res.statusCode, url).toBe(303);
      expect(res.headers.location).toBe(`/console/sign-in?next=${encodeURIComponent(url)}`);
    }
  });

  it("lists the tenant's cases in review oldest first, never another tenant's, with filters and paging", async () => {
    const { partner, caseId: first } = await caseInReview();
    const { caseId: second } = await caseInReview(partner, 7000);
    await caseInReview(partner, 10); // approved: not in the queue
    const other = await caseInReview();
    const { browser } = await signedIn(h.app, partner.tenantId, "viewer");
    const page = await browser.get("/console/queue");
    expect(page.statusCode).toBe(200);
    expect(page.body.indexOf(first)).toBeGreaterThan(-1);
    expect(page.body.indexOf(first)).toBeLessThan(page.body.indexOf(second));
    expect(page.body).not.toContain(other.caseId);
    expect(page.body).toContain("Payment of 5000");

    expect((await browser.get("/console/queue?type=KYC")).body).not.toContain(first);
    expect((await browser.get("/console/queue?workflowId=tx&type=Transaction")).body).toContain(first);
    expect((await browser.get("/console/queue?age=1h")).body).not.toContain(first);
    expect((await browser.get("/console/queue?status=waiting")).body).not.toContain(first);
    await enableTags(h.app, partner.tenantId, "vip");
    await h.app.inject({
      method: "POST",
      url: `/cases/${second}/tags`,
      headers: partner.headers,
      payload: { tag: "vip" },
    });
    const tagged = await browser.get("/console/queue?tag=vip");
    expect(tagged.body).toContain(second);
    expect(tagged.body).not.toContain(first);
    expect((await browser.get("/console/queue?status=nonsense")).statusCode).toBe(400);
    expect((await browser.get("/console/queue?cursor=garbage")).statusCode).toBe(400);
  });

  it("pages through more cases than one page holds, each once", async () => {
    const partner = await createPartner(h.app);
    const ids: string[] = [];
    for (let i = 0; i < 55; i++) ids.push(await createStoredCase(h.ctx, partner.tenantId, "failed"));
    const { browser } = await signedIn(h.app, partner.tenantId, "viewer");
    const first = await browser.get("/console/queue?status=failed");
    const next = /href="(\/console\/queue\?[^"]*cursor=[^"]+)"/
      .exec(first.body)?.[1]
      ?.replaceAll("&amp;", "&");
    expect(next).toBeDefined();
    const second = await browser.get(next as string);
    const seen = (body: string) => ids.filter((id) => body.includes(`/console/cases/${id}`));
    expect(seen(first.body)).toHaveLength(50);
    expect(seen(second.body)).toHaveLength(5);
    expect(new Set([...seen(first.body), ...seen(second.body)]).size).toBe(55);
  });

  // The queue reads oldest first: its last cases carry the tag; All cases newest first: its first.
  it.each([
    { list: "the queue", path: "/console/queue", tagged: "desc" as const },
    { list: "All cases", path: "/console/cases", tagged: "asc" as const },
  ])(
    "$list, filtered by a tag few cases carry, reads a bounded share per page and pages on",
    async ({ path, tagged }) => {
      const partner = await createPartner(h.app);
      const { browser } = await signedIn(h.app, partner.tenantId, "viewer");
      // More failed cases than a tagged page reads; only the two it reads last carry the tag.
      await sql`
      INSERT INTO cases (id, tenant_id, request_id, status, type, workflow_id, workflow_version, subject,
                         payload, metadata, decision_history, dry_run, created_at, updated_at)
      SELECT gen_random_uuid(), ${partner.tenantId}::uuid, 'scan-' || g, 'failed', 'KYC', 'kyc', 1,
             '{"displayName":"Scanned"}'::json, '{}'::json, '{}'::json, '[]'::jsonb, false,
             now() - make_interval(secs => g), now()
      FROM generate_series(1, ${SCAN_LIMIT + 10}::int) AS g`.execute(h.ctx.db.root);
      const last = await h.ctx.db.root
        .selectFrom("cases")
        .select("id")
        .where("tenant_id", "=", partner.tenantId)
        .orderBy("created_at", tagged)
        .limit(2)
        .execute();
      await enableTags(h.app, partner.tenantId, "vip");
      for (const { id } of last) {
        const tag = await h.app.inject({
          method: "POST",
          url: `/cases/${id}/tags`,
          headers: partner.headers,
          payload: { tag: "vip" },
        });
        expect(tag.statusCode, tag.body).toBeLessThan(300);
      }
      const first = await browser.get(`${path}?status=failed&tag=vip`);
      expect(first.statusCode).toBe(200);
      for (const { id } of last) expect(first.body).not.toContain(id);
      expect(first.body).toContain("the next page reads on");
      const next = new RegExp(`href="(${path}\\?[^"]*cursor=[^"]+)"`)
        .exec(first.body)?.[1]
        ?.replaceAll("&amp;", "&");
      expect(next).toBeDefined();
      const second = await browser.get(next as string);
      expect(second.statusCode).toBe(200);
      for (const { id } of last) expect(second.body).toContain(`/console/cases/${id}`);
      expect(second.body).not.toContain("the next page reads on");
    },
  );
});

describe("the case page", () => {
  it("shows the decision, its history, the path through the workflow, subject and payload", async () => {
    const { partner, caseId } = await caseInReview();
    const { browser } = await signedIn(h.app, partner.tenantId, "viewer");
    const page = await browser.get(`/console/cases/${caseId}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("Payment of 5000");
    expect(page.body).toContain("high amount");
    expect(page.body).toMatch(/<strong class="mono">screen<\/strong>/);
    expect(page.body).toMatch(/<strong class="mono">review<\/strong>/);
    expect(page.body).toContain("<li>rule 1 (payload.amount > 1000) held: went on to review</li>");
    expect(page.body).toContain("transaction.amount");
    expect(page.headers["content-security-policy"]).toContain("script-src 'self'");
    expect(page.headers["x-frame-options"]).toBe("DENY");
    // Its time in the service, as the console bench reads it.
    expect(page.headers["server-timing"]).toMatch(/^app;dur=\d+\.\d$/);
  });

  it("tells a score node's path: each rule that held with its points, the score and the band", async () => {
    const partner = await createPartner(h.app);
    await createWorkflow(h.app, partner.tenantId, "risk", riskScore);
    const res = await h.app.inject({
      method: "POST",
      url: "/cases",
      headers: partner.headers,
      payload: {
        workflowId: "risk",
        type: "Transaction",
        eventTimestamp: new Date().toISOString(),
        payload: { amount: 25_000, country: "GB" },
        subject: transactionSubject,
      },
    });
    await waitForCase(h.app, partner.headers, res.json().caseId);
    const { browser } = await signedIn(h.app, partner.tenantId, "viewer");
    const page = await browser.get(`/console/cases/${res.json().caseId}`);
    expect(page.body).toContain("<li>rule 1 (payload.amount > 10000) held: +40 points</li>");
    expect(page.body).toContain("<li>rule 2 (payload.amount > 1000) held: +20 points</li>");
    expect(page.body).toContain("<li>score 65</li>");
    expect(page.body).toMatch(/<li>band 2 \(minScore 20\): decided in_review<\/li>/);
  });

  it("escapes what partners sent: markup in a subject is text", async () => {
    const partner = await createPartner(h.app);
    await createWorkflow(h.app, partner.tenantId, "tx", amountScreen);
    const res = await h.app.inject({
      method: "POST",
      url: "/cases",
      headers: partner.headers,
      payload: {
        workflowId: "tx",
        type: "Transaction",
        eventTimestamp: new Date().toISOString(),
        payload: { amount: 5000 },
        subject: { ...transactionSubject, displayName: `<script>alert(1)</script>` },
      },
    });
    expect(res.statusCode, res.body).toBe(201);
    const { browser } = await signedIn(h.app, partner.tenantId, "viewer");
    const page = await browser.get(`/console/cases/${res.json().caseId}`);
    expect(page.body).not.toContain("<script>alert(1)</script>");
    expect(page.body).toContain("&lt;script>alert(1)&lt;/script>");
  });

  it("another tenant's case is 404, as is an unknown or malformed id", async () => {
    const { caseId } = await caseInReview();
    const stranger = await createPartner(h.app);
    const { browser } = await signedIn(h.app, stranger.tenantId, "admin");
    for (const url of [
      `/console/cases/${caseId}`,
      "/console/cases/00000000-0000-4000-8000-000000000000",
      "/console/cases/not-a-case",
    ]) {
      expect((await browser.get(url)).statusCode, url).toBe(404);
    }
    const override = await browser.post(`/console/cases/${caseId}/decision`, {
      value: "approved",
      reason: "mine now",
    });
    expect(override.statusCode).toBe(404);
    const close = await browser.post(`/console/cases/${caseId}/close`);
    expect(close.statusCode).toBe(404);
  });
});

describe("case actions", () => {
  it("an analyst overrides with a reason; the history carries analyst:<userId> and the audit log the change", async () => {
    const { partner, caseId } = await caseInReview();
    const { browser, user } = await signedIn(h.app, partner.tenantId, "analyst");
    await browser.get(`/console/cases/${caseId}`);
    const noReason = await browser.post(`/console/cases/${caseId}/decision`, {
      value: "approved",
      reason: " ",
    });
    expect(noReason.statusCode).toBe(400);
    const res = await browser.post(`/console/cases/${caseId}/decision`, {
      value: "approved",
      reason: "documents checked",
      actor: "someone-else",
    });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(`/console/cases/${caseId}?done=decision#decision`);
    const record = (await h.app.inject({ url: `/cases/${caseId}`, headers: partner.headers })).json();
    expect(record.result.decision).toMatchObject({
      value: "approved",
      source: "analyst",
      actor: `analyst:${user.userId}`,
      reason: "documents checked",
    });
    const audit = await h.ctx.db.root
      .selectFrom("console_audit")
      .selectAll()
      .where("target", "=", `case:${caseId}`)
      .execute();
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ actor: `analyst:${user.userId}`, action: "case.override" });
    expect(audit[0]?.before).toMatchObject({ status: "in_review", decision: { value: "in_review" } });
    expect(audit[0]?.after).toMatchObject({ status: "decided", decision: { value: "approved" } });
  });

  it("a viewer sees no review controls and the server refuses the post with 403", async () => {
    const { partner, caseId } = await caseInReview();
    const { browser } = await signedIn(h.app, partner.tenantId, "viewer");
    const page = await browser.get(`/console/cases/${caseId}`);
    expect(page.body).not.toContain(`action="/console/cases/${caseId}/decision"`);
    expect(page.body).not.toContain(`action="/console/cases/${caseId}/close"`);
    const res = await browser.post(`/console/cases/${caseId}/decision`, { value: "approved", reason: "x" });
    expect(res.statusCode).toBe(403);
    expect(res.body).toContain("cases:review");
    const record = (await h.app.inject({ url: `/cases/${caseId}`, headers: partner.headers })).json();
    expect(record.result.decision.value).toBe("in_review");
  });

  it("a post without the CSRF token changes nothing", async () => {
    const { partner, caseId } = await caseInReview();
    const { browser } = await signedIn(h.app, partner.tenantId, "analyst");
    const res = await browser.post(`/console/cases/${caseId}/close`, {}, { csrf: false });
    expect(res.statusCode).toBe(403);
    expect((await h.app.inject({ url: `/cases/${caseId}`, headers: partner.headers })).json().status).toBe(
      "in_review",
    );
  });

  it("closes a case, then refuses to close it again with 409", async () => {
    const { partner, caseId } = await caseInReview();
    const { browser } = await signedIn(h.app, partner.tenantId, "analyst");
    await browser.get(`/console/cases/${caseId}`);
    expect((await browser.post(`/console/cases/${caseId}/close`)).statusCode).toBe(303);
    const record = (await h.app.inject({ url: `/cases/${caseId}`, headers: partner.headers })).json();
    expect(record.status).toBe("closed");
    const again = await browser.post(`/console/cases/${caseId}/close`);
    expect(again.statusCode).toBe(409);
    const page = await browser.get(`/console/cases/${caseId}`);
    expect(page.body).not.toContain(`action="/console/cases/${caseId}/close"`);
  });

  it("adds and removes a tag of the vocabulary; an unknown tag is 400", async () => {
    const { partner, caseId } = await caseInReview();
    await enableTags(h.app, partner.tenantId, "fraud-ring");
    const { browser, user } = await signedIn(h.app, partner.tenantId, "analyst");
    await browser.get(`/console/cases/${caseId}`);
    expect((await browser.post(`/console/cases/${caseId}/tags`, { tag: "fraud-ring" })).statusCode).toBe(303);
    const tags = (await h.app.inject({ url: `/cases/${caseId}/tags`, headers: partner.headers })).json().tags;
    expect(tags).toEqual([
      expect.objectContaining({ tag: "fraud-ring", createdBy: `analyst:${user.userId}` }),
    ]);
    expect(
      (await browser.post(`/console/cases/${caseId}/tags`, { tag: "not-in-vocabulary" })).statusCode,
    ).toBe(400);
    expect(
      (await browser.post(`/console/cases/${caseId}/tags/remove`, { tag: "fraud-ring" })).statusCode,
    ).toBe(303);
    expect(
      (await h.app.inject({ url: `/cases/${caseId}/tags`, headers: partner.headers })).json().tags,
    ).toEqual([]);
  });

  it("raises, reminds and cancels an information request as the analyst", async () => {
    const { partner, caseId } = await caseInReview();
    const { browser, user } = await signedIn(h.app, partner.tenantId, "analyst");
    await browser.get(`/console/cases/${caseId}`);
    const deadline = new Date(Date.now() + 30 * 86_400_000).toISOString();
    const raised = await browser.post(`/console/cases/${caseId}/rfi`, {
      to: "ada@example.com",
      cc: "ops@example.com, risk@example.com",
      subject: "Source of funds",
      body: "Please explain.",
      expiresAt: deadline.slice(0, 16),
    });
    expect(raised.statusCode, raised.body).toBe(303);
    const list = (await h.app.inject({ url: `/cases/${caseId}`, headers: partner.headers })).json()
      .informationRequests;
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({
      source: "analyst",
      requestedBy: `analyst:${user.userId}`,
      cc: ["ops@example.com", "risk@example.com"],
      expiresAt: `${deadline.slice(0, 16)}:00.000Z`,
    });
    const rfiId = list[0].rfiId;
    expect((await browser.post(`/console/cases/${caseId}/rfi/${rfiId}/remind`)).statusCode).toBe(303);
    expect((await browser.post(`/console/cases/${caseId}/rfi/${rfiId}/cancel`)).statusCode).toBe(303);
    const after = (
      await h.app.inject({ url: `/cases/${caseId}/rfi/${rfiId}`, headers: partner.headers })
    ).json();
    expect(after).toMatchObject({
      status: "cancelled",
      reminderCount: 1,
      cancelledBy: `analyst:${user.userId}`,
    });
    expect((await browser.post(`/console/cases/${caseId}/rfi/${rfiId}/remind`)).statusCode).toBe(409);
  });

  it("answers a request with an uploaded document, shown inline with nosniff; the partner's answer is then 409", async () => {
    const { partner, caseId } = await caseInReview();
    const { rfiId } = await raiseRfi(h.app, partner, caseId);
    const { browser, user } = await signedIn(h.app, partner.tenantId, "analyst");
    await browser.get(`/console/cases/${caseId}`);
    const pdf = Buffer.from("%PDF-1.4\n%%EOF\n");
    const slot = await browser.postJson(`/console/cases/${caseId}/rfi/${rfiId}/uploads`, {
      filename: "statement.pdf",
      contentType: "application/pdf",
      sizeBytes: pdf.length,
    });
    expect(slot.statusCode, slot.body).toBe(201);
    const { uploadId, uploadUrl } = slot.json();
    const put = await injectPut(h.app, uploadUrl, pdf);
    expect(put.statusCode).toBe(200);
    const answered = await browser.post(`/console/cases/${caseId}/rfi/${rfiId}/answer`, {
      fieldKey: ["source_of_funds", ""],
      fieldValue: ["salary", ""],
      uploadId,
    });
    expect(answered.statusCode, answered.body).toBe(303);
    const rfi = (
      await h.app.inject({ url: `/cases/${caseId}/rfi/${rfiId}`, headers: partner.headers })
    ).json();
    expect(rfi.answer).toMatchObject({
      answeredBy: `analyst:${user.userId}`,
      fields: [{ key: "source_of_funds", value: "salary" }],
      documents: [{ uploadId, filename: "statement.pdf" }],
    });
    const page = await browser.get(`/console/cases/${caseId}`);
    expect(page.body).toContain(
      `<iframe src="/console/cases/${caseId}/documents/${uploadId}" sandbox title=`,
    );
    const doc = await browser.get(`/console/cases/${caseId}/documents/${uploadId}`);
    expect(doc.statusCode).toBe(200);
    expect(doc.headers["content-type"]).toBe("application/pdf");
    expect(doc.headers["x-content-type-options"]).toBe("nosniff");
    expect(doc.headers["content-security-policy"]).toContain("sandbox");
    expect(doc.rawPayload.equals(pdf)).toBe(true);
    const partnerAnswer = await h.app.inject({
      method: "POST",
      url: `/cases/${caseId}/rfi/${rfiId}/response`,
      headers: partner.headers,
      payload: { fields: [{ key: "x", value: "y" }] },
    });
    expect(partnerAnswer.statusCode).toBe(409);
    expect(partnerAnswer.json()).toMatchObject({ error: "already_answered", answeredBy: "analyst" });

    const stranger = await signedIn(h.app, (await createPartner(h.app)).tenantId, "admin");
    expect((await stranger.browser.get(`/console/cases/${caseId}/documents/${uploadId}`)).statusCode).toBe(
      404,
    );
  });

  it("an upload slot without a session is 401 JSON, without the CSRF header 403", async () => {
    const { partner, caseId } = await caseInReview();
    const { rfiId } = await raiseRfi(h.app, partner, caseId);
    const anonymous = await h.app.inject({
      method: "POST",
      url: `/console/cases/${caseId}/rfi/${rfiId}/uploads`,
      payload: { filename: "a.pdf", contentType: "application/pdf", sizeBytes: 3 },
    });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json().error).toMatch(/sign in/);
    const { browser } = await signedIn(h.app, partner.tenantId, "analyst");
    browser.csrf = "";
    const res = await browser.postJson(`/console/cases/${caseId}/rfi/${rfiId}/uploads`, {
      filename: "a.pdf",
      contentType: "application/pdf",
      sizeBytes: 3,
    });
    expect(res.statusCode).toBe(403);
  });
});
