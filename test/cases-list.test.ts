import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "./support/app.js";
import { adminHeaders, createPartner, enableTags, type Partner } from "./support/fixtures.js";
import { securityTests } from "./support/security.js";
import {
  amountScreen,
  createWorkflow,
  kycSubject,
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

async function submit(partner: Partner, extra: Record<string, unknown>): Promise<string> {
  const res = await h.app.inject({
    method: "POST",
    url: "/cases",
    headers: partner.headers,
    payload: { workflowId: "screen", type: "KYC", payload: { amount: 1 }, subject: kycSubject, ...extra },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().caseId;
}

function list(partner: Partner, query = "") {
  return h.app.inject({ method: "GET", url: `/cases${query}`, headers: partner.headers });
}

async function allPages(partner: Partner, query: string, between?: () => Promise<void>): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const sep = query ? "&" : "?";
    const res = await list(partner, `${query}${cursor ? `${sep}cursor=${cursor}` : ""}`);
    expect(res.statusCode, res.body).toBe(200);
    ids.push(...res.json().cases.map((c: { caseId: string }) => c.caseId));
    cursor = res.json().nextCursor;
    await between?.();
  } while (cursor);
  return ids;
}

describe("GET /cases", () => {
  securityTests(() => h, {
    scope: "cases:read",
    ownsResource: false,
    async request() {
      return { method: "GET", url: "/cases" };
    },
  });

  it("lists newest first with summaries and pages with a cursor that is stable while cases are added", async () => {
    const partner = await createPartner(h.app);
    await createWorkflow(h.app, partner.tenantId, "screen", amountScreen);
    const created: string[] = [];
    for (let i = 0; i < 7; i++) created.push(await submit(partner, {}));
    const first = await list(partner, "?limit=3");
    expect(first.json().cases).toHaveLength(3);
    expect(first.json().cases[0]).toMatchObject({
      caseId: created[6],
      type: "KYC",
      workflowId: "screen",
      workflowVersion: 1,
      displayName: "Ada Lovelace",
      externalCustomerId: "cust-42",
      dryRun: false,
    });
    const added: string[] = [];
    const seen = await allPages(partner, "?limit=3", async () => {
      added.push(await submit(partner, {}));
    });
    expect(seen).toEqual([...created].reverse());
    expect(added).toHaveLength(3);
    const everything = await allPages(partner, "?limit=100");
    expect(everything).toEqual([...created, ...added].reverse());
  });

  it("filters by status, type, workflow, decision, tag, external customer id and creation time", async () => {
    const partner = await createPartner(h.app);
    await createWorkflow(h.app, partner.tenantId, "screen", amountScreen);
    await createWorkflow(h.app, partner.tenantId, "other", amountScreen);
    await enableTags(h.app, partner.tenantId, "watch");
    const low = await submit(partner, {});
    const high = await submit(partner, { payload: { amount: 5000 } });
    const tx = await submit(partner, {
      type: "Transaction",
      subject: transactionSubject,
      eventTimestamp: new Date().toISOString(),
    });
    const other = await submit(partner, { workflowId: "other" });
    for (const id of [low, high, tx, other]) await waitForCase(h.app, partner.headers, id);
    await h.app.inject({
      method: "POST",
      url: `/cases/${high}/tags`,
      headers: partner.headers,
      payload: { tag: "watch" },
    });
    const ids = async (query: string) => allPages(partner, query);
    expect(await ids("?status=in_review")).toEqual([high]);
    expect(await ids("?decision=approved")).toEqual([other, tx, low]);
    expect(await ids("?type=Transaction")).toEqual([tx]);
    expect(await ids("?workflowId=other")).toEqual([other]);
    expect(await ids("?tag=watch")).toEqual([high]);
    expect(await ids("?externalCustomerId=cust-7")).toEqual([tx]);
    const row = await h.ctx.db.root
      .selectFrom("cases")
      .select("created_at")
      .where("id", "=", tx)
      .executeTakeFirstOrThrow();
    const at = encodeURIComponent(row.created_at.toISOString());
    expect(await ids(`?createdFrom=${at}`)).toEqual([other, tx]);
    expect(await ids(`?createdTo=${at}`)).toEqual([high, low]);
    await h.app.inject({
      method: "POST",
      url: `/admin/cases/${low}/decision`,
      headers: adminHeaders,
      payload: { value: "declined", actor: "jane" },
    });
    expect(await ids("?decision=declined")).toEqual([low]);
  });

  it("leaves dry-run cases out, and lists only them with dryRun=true", async () => {
    const partner = await createPartner(h.app);
    await createWorkflow(h.app, partner.tenantId, "screen", amountScreen);
    const real = await submit(partner, {});
    const dry = await h.app.inject({
      method: "POST",
      url: `/admin/tenants/${partner.tenantId}/workflows/screen/versions/1/dry-run`,
      headers: adminHeaders,
      payload: { type: "KYC", payload: { amount: 1 }, subject: kycSubject },
    });
    expect(dry.statusCode, dry.body).toBe(201);
    expect(await allPages(partner, "")).toEqual([real]);
    expect(await allPages(partner, "?dryRun=false")).toEqual([real]);
    expect(await allPages(partner, "?dryRun=true")).toEqual([dry.json().caseId]);
  });

  it("shows only the tenant's own cases", async () => {
    const a = await createPartner(h.app);
    const b = await createPartner(h.app);
    await createWorkflow(h.app, a.tenantId, "screen", amountScreen);
    await submit(a, {});
    expect((await list(b)).json()).toEqual({ cases: [], nextCursor: null });
  });

  it("answers 400 for a bad parameter", async () => {
    const partner = await createPartner(h.app);
    for (const query of [
      "?limit=0",
      "?limit=101",
      "?limit=ten",
      "?status=done",
      "?type=Loan",
      "?decision=maybe",
      "?createdFrom=yesterday",
      "?createdTo=2026-01-01",
      "?cursor=not-a-cursor",
      "?colour=blue",
    ]) {
      const res = await list(partner, query);
      expect(res.statusCode, query).toBe(400);
      expect(typeof res.json().error).toBe("string");
    }
  });
});
