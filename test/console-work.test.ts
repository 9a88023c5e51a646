import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "./support/app.js";
import { type ConsoleClient, signedIn } from "./support/console.js";
import {
  adminHeaders,
  createKey,
  createStoredCase,
  createTenant,
  enableTags,
  type Partner,
} from "./support/fixtures.js";
import {
  amountScreen,
  createWorkflow,
  kycSubject,
  transactionSubject,
  waitForCase,
} from "./support/workflows.js";

/**
 * Analysts at work, over HTTP on the real app and database (PGlite, or PostgreSQL with
 * DATABASE_URL): every case findable, owners, internal comments, deadlines, bulk actions, and
 * concurrent overrides.
 */

let h: TestApp;

beforeAll(async () => {
  h = await createTestApp();
  await h.startWorker();
});

afterAll(async () => {
  await h.close();
});

interface Tenant {
  tenantId: string;
  partner: Partner;
}

async function tenant(): Promise<Tenant> {
  const tenantId = await createTenant(h.app);
  const partner = await createKey(h.app, tenantId);
  await createWorkflow(h.app, tenantId, "screen", amountScreen);
  return { tenantId, partner };
}

async function submit(
  t: Tenant,
  options: { name: string; amount: number; customer?: string; email?: string; type?: "KYC" | "Transaction" },
): Promise<string> {
  const subject =
    options.type === "Transaction"
      ? {
          ...transactionSubject,
          displayName: options.name,
          transaction: { ...transactionSubject.transaction, amount: options.amount },
        }
      : {
          displayName: options.name,
          person: {
            ...kycSubject.person,
            identifiers: [
              { type: "external_customer_id", value: options.customer ?? "cust-0" },
              ...(options.email ? [{ type: "email", value: options.email }] : []),
            ],
          },
        };
  const res = await h.app.inject({
    method: "POST",
    url: "/cases",
    headers: t.partner.headers,
    payload: {
      workflowId: "screen",
      type: options.type ?? "KYC",
      eventTimestamp: new Date().toISOString(),
      payload: { amount: options.amount },
      subject,
    },
  });
  expect(res.statusCode, res.body).toBe(201);
  const caseId = res.json().caseId as string;
  await waitForCase(h.app, t.partner.headers, caseId);
  return caseId;
}

/** The case ids a console page lists, in order. */
function listed(body: string): string[] {
  return [...body.matchAll(/<a class="case-link" href="\/console\/cases\/([0-9a-f-]{36})">/g)].map(
    (m) => m[1] as string,
  );
}

describe("All cases", () => {
  let t: Tenant;
  let browser: ConsoleClient;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    t = await tenant();
    ids.grace = await submit(t, {
      name: "Grace Hopper",
      amount: 50,
      customer: "cust-grace",
      email: "Grace@Navy.example",
    });
    ids.alan = await submit(t, { name: "Alan Turing", amount: 5000, customer: "cust-alan" });
    ids.payment = await submit(t, { name: "Wire 9902 to Meridian", amount: 250_000, type: "Transaction" });
    ({ browser } = await signedIn(h.app, t.tenantId, "analyst"));
  });

  it("lists every status and decision, newest first; the queue's unknown status is no longer a wall", async () => {
    const all = await browser.get("/console/cases");
    expect(all.statusCode).toBe(200);
    expect(listed(all.body)).toEqual([ids.payment, ids.alan, ids.grace]);
    const decided = await browser.get("/console/cases?status=decided");
    expect(listed(decided.body)).toEqual([ids.grace]);
    const declined = await browser.get("/console/cases?decision=in_review");
    expect(listed(declined.body)).toEqual([ids.payment, ids.alan]);
    expect((await browser.get("/console/cases?status=nonsense")).statusCode).toBe(400);
  });

  it("finds a decided case by a name's prefix and words, customer id, any identifier and case id", async () => {
    for (const q of ["Grace", "gra", "grace hop", "HOPPER", "cust-grace", "grace@navy.example", ids.grace]) {
      const found = await browser.get(`/console/cases?q=${encodeURIComponent(q as string)}`);
      expect(found.statusCode, q).toBe(200);
      expect(listed(found.body), q).toEqual([ids.grace]);
    }
    // The partner's customer id of the transaction's sender is an identifier too (entities).
    expect(listed((await browser.get("/console/cases?q=cust-7")).body)).toEqual([ids.payment]);
    expect(listed((await browser.get("/console/cases?q=nobody")).body)).toEqual([]);
    // Search and filters together: a name that is not decided is not found among the decided.
    expect(listed((await browser.get("/console/cases?q=alan&status=decided")).body)).toEqual([]);
  });

  it("filters by type, amount range, created range and tag", async () => {
    expect(listed((await browser.get("/console/cases?type=Transaction")).body)).toEqual([ids.payment]);
    expect(listed((await browser.get("/console/cases?amountMin=100000&amountMax=300000")).body)).toEqual([
      ids.payment,
    ]);
    expect(listed((await browser.get("/console/cases?amountMax=10")).body)).toEqual([]);
    const today = new Date().toISOString().slice(0, 10);
    expect(listed((await browser.get(`/console/cases?from=${today}&to=${today}`)).body)).toHaveLength(3);
    expect(listed((await browser.get("/console/cases?to=2020-01-01")).body)).toEqual([]);
    await enableTags(h.app, t.tenantId, "pep");
    await h.app.inject({
      method: "POST",
      url: `/cases/${ids.alan}/tags`,
      headers: t.partner.headers,
      payload: { tag: "pep" },
    });
    expect(listed((await browser.get("/console/cases?tag=pep")).body)).toEqual([ids.alan]);
    for (const bad of ["from=yesterday", "amountMin=-5", "assignee=someone", "cursor=bogus"]) {
      expect((await browser.get(`/console/cases?${bad}`)).statusCode, bad).toBe(400);
    }
  });

  it("saves a filter that the whole team sees, and only its author or an admin deletes it", async () => {
    await browser.get("/console/cases?status=decided&type=KYC");
    const saved = await browser.post("/console/cases/filters", {
      name: "Decided KYC",
      query: "status=decided&type=KYC",
    });
    expect(saved.statusCode, saved.body).toBe(303);
    const colleague = await signedIn(h.app, t.tenantId, "analyst");
    const page = await colleague.browser.get("/console/cases");
    expect(page.body).toContain('<a href="/console/cases?status=decided&amp;type=KYC">Decided KYC</a>');
    const filterId = /\/console\/cases\/filters\/([0-9a-f-]{36})\/delete/.exec(
      (await browser.get("/console/cases")).body,
    )?.[1] as string;
    expect(filterId).toBeDefined();
    // The colleague sees no delete button, and the server refuses the post.
    expect(page.body).not.toContain(`/console/cases/filters/${filterId}/delete`);
    expect((await colleague.browser.post(`/console/cases/filters/${filterId}/delete`)).statusCode).toBe(403);
    const again = await browser.post("/console/cases/filters", {
      name: "Decided KYC",
      query: "status=decided",
    });
    expect(again.statusCode).toBe(400);
    expect(again.body).toContain('id="filter-name-error"');
    const stranger = await signedIn(h.app, await createTenant(h.app, "Other"), "admin");
    expect((await stranger.browser.get("/console/cases")).body).not.toContain("Decided KYC");
    await stranger.browser.get("/console/cases");
    expect((await stranger.browser.post(`/console/cases/filters/${filterId}/delete`)).statusCode).toBe(404);
    expect((await browser.post(`/console/cases/filters/${filterId}/delete`)).statusCode).toBe(303);
    expect((await browser.get("/console/cases")).body).not.toContain("Decided KYC");
  });
});

describe("owners, comments and deadlines", () => {
  it("an analyst takes a case, it is in Mine, an admin reassigns it, and another analyst may not take it", async () => {
    const t = await tenant();
    const caseId = await submit(t, { name: "Ada Owner", amount: 5000 });
    const jane = await signedIn(h.app, t.tenantId, "analyst");
    const sam = await signedIn(h.app, t.tenantId, "analyst");
    const admin = await signedIn(h.app, t.tenantId, "admin");
    await jane.browser.get(`/console/cases/${caseId}`);
    expect(
      (await jane.browser.post(`/console/cases/${caseId}/assign`, { assignee: jane.user.userId })).statusCode,
    ).toBe(303);
    expect(listed((await jane.browser.get("/console/mine")).body)).toEqual([caseId]);
    expect(listed((await sam.browser.get("/console/mine")).body)).toEqual([]);
    expect(listed((await sam.browser.get(`/console/cases?assignee=${jane.user.userId}`)).body)).toEqual([
      caseId,
    ]);
    // Sam may neither take it nor decide on it.
    const page = await sam.browser.get(`/console/cases/${caseId}`);
    expect(page.body).toContain("Another analyst owns this case");
    expect(page.body).not.toContain("Override the decision");
    expect(
      (await sam.browser.post(`/console/cases/${caseId}/assign`, { assignee: sam.user.userId })).statusCode,
    ).toBe(409);
    expect(
      (await sam.browser.post(`/console/cases/${caseId}/decision`, { value: "approved", reason: "fine" }))
        .statusCode,
    ).toBe(409);
    expect((await sam.browser.post(`/console/cases/${caseId}/assign`, { assignee: "" })).statusCode).toBe(
      409,
    );
    // An analyst assigns to nobody else; an admin reassigns.
    await jane.browser.get(`/console/cases/${caseId}`);
    expect(
      (await jane.browser.post(`/console/cases/${caseId}/assign`, { assignee: sam.user.userId })).statusCode,
    ).toBe(403);
    await admin.browser.get(`/console/cases/${caseId}`);
    expect(
      (await admin.browser.post(`/console/cases/${caseId}/assign`, { assignee: sam.user.userId })).statusCode,
    ).toBe(303);
    expect(listed((await sam.browser.get("/console/mine")).body)).toEqual([caseId]);
    const rows = await h.ctx.db.root
      .selectFrom("console_audit")
      .select(["actor", "action", "before", "after"])
      .where("tenant_id", "=", t.tenantId)
      .where("target", "=", `case:${caseId}`)
      .orderBy("id")
      .execute();
    expect(rows).toEqual([
      {
        actor: `analyst:${jane.user.userId}`,
        action: "case.assign",
        before: { assignee: null },
        after: { assignee: jane.user.userId },
      },
      {
        actor: `analyst:${admin.user.userId}`,
        action: "case.assign",
        before: { assignee: jane.user.userId },
        after: { assignee: sam.user.userId },
      },
    ]);
    // Another tenant's user cannot reach it, and a malformed id is a 404, never a 5xx.
    const stranger = await signedIn(h.app, await createTenant(h.app, "Other"), "admin");
    await stranger.browser.get("/console/cases");
    expect(
      (await stranger.browser.post(`/console/cases/${caseId}/assign`, { assignee: stranger.user.userId }))
        .statusCode,
    ).toBe(404);
    expect(
      (await admin.browser.post("/console/cases/bulk", { action: "take", caseId: ["not-a-uuid"] }))
        .statusCode,
    ).toBe(404);
    expect(
      (await admin.browser.post(`/console/cases/${caseId}/assign`, { assignee: stranger.user.userId }))
        .statusCode,
    ).toBe(400);
  });

  it("an internal comment is on the case page and in the audit log, never in the partner's case record", async () => {
    const t = await tenant();
    const caseId = await submit(t, { name: "Ada Notes", amount: 5000 });
    const { browser, user } = await signedIn(h.app, t.tenantId, "analyst");
    await browser.get(`/console/cases/${caseId}`);
    const note = "Called the branch: the <b>signature</b> matches";
    expect((await browser.post(`/console/cases/${caseId}/comments`, { body: note })).statusCode).toBe(303);
    const page = await browser.get(`/console/cases/${caseId}`);
    expect(page.body).toContain("Called the branch: the &lt;b>signature&lt;/b> matches");
    const record = await h.app.inject({ url: `/cases/${caseId}`, headers: t.partner.headers });
    expect(record.statusCode).toBe(200);
    expect(record.body).not.toContain("signature");
    expect(record.body).not.toMatch(/comment/i);
    const list = await h.app.inject({ url: "/cases", headers: t.partner.headers });
    expect(list.body).not.toContain("signature");
    const operator = await h.app.inject({ url: `/admin/cases/${caseId}`, headers: adminHeaders });
    expect(operator.body).not.toContain("signature");
    const audit = await browser.get("/console/audit");
    expect(audit.body).toContain("case.comment");
    const [row] = await h.ctx.db.root
      .selectFrom("console_audit")
      .select(["actor", "after"])
      .where("tenant_id", "=", t.tenantId)
      .where("action", "=", "case.comment")
      .execute();
    expect(row).toMatchObject({ actor: `analyst:${user.userId}`, after: { body: note } });
    const empty = await browser.post(`/console/cases/${caseId}/comments`, { body: "   " });
    expect(empty.statusCode).toBe(400);
    expect(empty.body).toContain('id="comment-body-error"');
  });

  it("a comment whose audit row fails is not kept: the row is written in the comment's transaction", async () => {
    const t = await tenant();
    const caseId = await submit(t, { name: "Ada Atomic", amount: 5000 });
    const { browser } = await signedIn(h.app, t.tenantId, "analyst");
    await browser.get(`/console/cases/${caseId}`);
    // The failure comes after the comment is written, in the statement that writes its audit row.
    await sql
      .raw(`
      CREATE FUNCTION refuse_audit_${t.tenantId.replaceAll("-", "")}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'injected failure after the change'; END $$;
      CREATE TRIGGER refuse_audit_${t.tenantId.replaceAll("-", "")} BEFORE INSERT ON console_audit
        FOR EACH ROW WHEN (NEW.tenant_id = '${t.tenantId}') EXECUTE FUNCTION refuse_audit_${t.tenantId.replaceAll("-", "")}();`)
      .execute(h.ctx.db.root);
    try {
      const failed = await browser.post(`/console/cases/${caseId}/comments`, { body: "lost with its row" });
      expect(failed.statusCode).toBe(500);
    } finally {
      await sql
        .raw(`DROP TRIGGER refuse_audit_${t.tenantId.replaceAll("-", "")} ON console_audit;
              DROP FUNCTION refuse_audit_${t.tenantId.replaceAll("-", "")}();`)
        .execute(h.ctx.db.root);
    }
    const comments = await h.ctx.db.root
      .selectFrom("case_comments")
      .select("id")
      .where("case_id", "=", caseId)
      .execute();
    expect(comments).toEqual([]);
    const audit = await h.ctx.db.root
      .selectFrom("console_audit")
      .select("id")
      .where("tenant_id", "=", t.tenantId)
      .where("action", "=", "case.comment")
      .execute();
    expect(audit).toEqual([]);
    // Without the failure, both are written.
    expect((await browser.post(`/console/cases/${caseId}/comments`, { body: "kept" })).statusCode).toBe(303);
    expect(
      await h.ctx.db.root.selectFrom("case_comments").select("body").where("case_id", "=", caseId).execute(),
    ).toEqual([{ body: "kept" }]);
  });

  it("a case's review is due its type's deadline after creation; overdue cases are marked", async () => {
    const t = await tenant();
    const caseId = await submit(t, { name: "Ada Late", amount: 5000 });
    const { browser } = await signedIn(h.app, t.tenantId, "admin");
    expect((await browser.get(`/console/cases/${caseId}`)).body).toContain("no deadline");
    await browser.get("/console/settings/review");
    const set = await browser.post("/console/settings/review", { KYC: "1", KYB: "", Transaction: "48" });
    expect(set.statusCode, set.body).toBe(303);
    await sql`UPDATE cases SET created_at = now() - interval '2 hours' WHERE id = ${caseId}`.execute(
      h.ctx.db.root,
    );
    const page = await browser.get(`/console/cases/${caseId}`);
    expect(page.body).toContain("(overdue)");
    const list = await browser.get("/console/cases");
    expect(list.body).toMatch(/<td class="overdue">.*overdue/);
    expect((await browser.post("/console/settings/review", { KYC: "0" })).statusCode).toBe(400);
  });
});

describe("ordering by due date", () => {
  const HOURS: Record<string, number> = { KYC: 1, Transaction: 48 };
  const STATUSES = ["in_review", "waiting", "decided"] as const;
  const TYPES = ["KYC", "Transaction", "KYB"] as const;
  let t: Tenant;
  let browser: ConsoleClient;
  const cases: Array<{ id: string; status: string; type: string; createdAt: Date }> = [];

  /** The order the lists must show: due first by due time, then the cases without a deadline, oldest first. */
  function expected(status?: string): string[] {
    const rows = cases
      .filter((c) => !status || c.status === status)
      .map((c) => {
        const hours = c.status === "decided" ? undefined : HOURS[c.type];
        return { ...c, due: hours === undefined ? null : c.createdAt.getTime() + hours * 3_600_000 };
      });
    const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : 1);
    const due = rows
      .filter((r) => r.due !== null)
      .sort((a, b) => (a.due as number) - (b.due as number) || byId(a, b));
    const rest = rows
      .filter((r) => r.due === null)
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || byId(a, b));
    return [...due, ...rest].map((r) => r.id);
  }

  /** Every page of a list, following its "Next" links. */
  async function allPages(url: string): Promise<string[]> {
    const ids: string[] = [];
    let next: string | undefined = url;
    while (next) {
      const page = await browser.get(next);
      expect(page.statusCode, next).toBe(200);
      ids.push(...listed(page.body));
      next = /<a[^>]*href="([^"]*cursor=[^"]*)"[^>]*>Next/.exec(page.body)?.[1]?.replaceAll("&amp;", "&");
    }
    return ids;
  }

  beforeAll(async () => {
    t = await tenant();
    ({ browser } = await signedIn(h.app, t.tenantId, "admin"));
    await browser.get("/console/settings/review");
    const set = await browser.post("/console/settings/review", { KYC: "1", KYB: "", Transaction: "48" });
    expect(set.statusCode, set.body).toBe(303);
    // 120 cases (more than two pages of 50), of each status and type, created over the last 50 hours.
    const now = Date.now();
    for (let i = 0; i < 120; i++) {
      const status = STATUSES[i % 3] as string;
      const type = TYPES[Math.floor(i / 3) % 3] as string;
      const createdAt = new Date(now - ((i * 97) % 3000) * 60_000);
      const id = await createStoredCase(h.ctx, t.tenantId, status as "in_review");
      await sql`UPDATE cases SET type = ${type}, created_at = ${createdAt} WHERE id = ${id}`.execute(
        h.ctx.db.root,
      );
      cases.push({ id, status, type, createdAt });
    }
  });

  it("All cases lists the most overdue first, then those without a deadline, across pages", async () => {
    const ids = await allPages("/console/cases?sort=due");
    expect(ids).toHaveLength(120);
    expect(ids).toEqual(expected());
    const first = await browser.get("/console/cases?sort=due");
    expect(first.body).toContain("by due date, overdue first");
    expect(first.body).toMatch(/<td class="overdue">.*overdue/);
    // Filters hold: the waiting Transactions alone, by due date.
    const waitingTx = cases
      .filter((c) => c.status === "waiting" && c.type === "Transaction")
      .map((c) => c.id);
    const filtered = await allPages("/console/cases?sort=due&status=waiting&type=Transaction");
    expect(filtered).toEqual(expected("waiting").filter((id) => waitingTx.includes(id)));
  });

  it("the review queue's tab orders by due date too, and an unknown order or a foreign page link is 400", async () => {
    expect(await allPages("/console/queue?status=in_review&sort=due")).toEqual(expected("in_review"));
    expect(await allPages("/console/queue?status=waiting&sort=due")).toEqual(expected("waiting"));
    expect((await browser.get("/console/queue?sort=soonest")).statusCode).toBe(400);
    expect((await browser.get("/console/cases?sort=soonest")).statusCode).toBe(400);
    // A page link of the default order is not one of the due order.
    const plain = await browser.get("/console/cases");
    const cursor = /cursor=([A-Za-z0-9_-]+)/.exec(plain.body)?.[1] as string;
    expect(cursor).toBeDefined();
    expect((await browser.get(`/console/cases?sort=due&cursor=${cursor}`)).statusCode).toBe(400);
    // Without the order, the queue stays oldest first.
    const oldest = cases
      .filter((c) => c.status === "in_review")
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : 1))
      .map((c) => c.id);
    expect(await allPages("/console/queue?status=in_review")).toEqual(oldest);
  });
});

describe("bulk actions", () => {
  it("tags, assigns and closes chosen cases, with one audit row per case", async () => {
    const t = await tenant();
    await enableTags(h.app, t.tenantId, "fraud-ring");
    const caseIds = [
      await submit(t, { name: "Ring 1", amount: 5000 }),
      await submit(t, { name: "Ring 2", amount: 5000 }),
      await submit(t, { name: "Ring 3", amount: 5000 }),
    ];
    const { browser, user } = await signedIn(h.app, t.tenantId, "analyst");
    await browser.get("/console/cases");
    const tagged = await browser.post("/console/cases/bulk", {
      action: "tag",
      tag: "fraud-ring",
      caseId: caseIds,
      back: "/console/cases?q=ring",
    });
    expect(tagged.statusCode).toBe(303);
    expect(tagged.headers.location).toBe("/console/cases?q=ring&done=tagged");
    for (const caseId of caseIds) {
      const tags = (await h.app.inject({ url: `/cases/${caseId}/tags`, headers: t.partner.headers })).json();
      expect(JSON.stringify(tags)).toContain("fraud-ring");
    }
    expect((await browser.post("/console/cases/bulk", { action: "take", caseId: caseIds })).statusCode).toBe(
      303,
    );
    expect(listed((await browser.get("/console/mine")).body).sort()).toEqual([...caseIds].sort());
    expect((await browser.post("/console/cases/bulk", { action: "close", caseId: caseIds })).statusCode).toBe(
      303,
    );
    const rows = await h.ctx.db.root
      .selectFrom("console_audit")
      .select(["action", "target"])
      .where("tenant_id", "=", t.tenantId)
      .where("actor", "=", `analyst:${user.userId}`)
      .execute();
    for (const action of ["case.tag_add", "case.assign", "case.close"]) {
      expect(
        rows
          .filter((r) => r.action === action)
          .map((r) => r.target)
          .sort(),
        action,
      ).toEqual(caseIds.map((id) => `case:${id}`).sort());
    }
    // A refusal is shown on the view it came from, above the bulk form, not on an error page.
    const none = await browser.post("/console/cases/bulk", {
      action: "tag",
      caseId: [],
      back: "/console/cases?q=ring",
    });
    expect(none.statusCode).toBe(400);
    expect(none.body).toContain('<p class="field-error" role="alert">Choose at least one case.</p>');
    expect(none.body).toContain('aria-label="Bulk actions"');
    expect(none.body).toContain('value="/console/cases?q=ring"');
    expect(none.body).not.toContain("That did not work");
    const untagged = await browser.post("/console/cases/bulk", { action: "tag", caseId: caseIds });
    expect(untagged.statusCode).toBe(400);
    expect(untagged.body).toContain('role="alert">Choose the tag to add.</p>');
    const unknown = await browser.post("/console/cases/bulk", { action: "explode", caseId: caseIds });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.body).toContain('role="alert">Choose what to do with the chosen cases.</p>');
    const viewer = await signedIn(h.app, t.tenantId, "viewer");
    await viewer.browser.get("/console/cases");
    expect(
      (await viewer.browser.post("/console/cases/bulk", { action: "take", caseId: caseIds })).statusCode,
    ).toBe(403);
  });
});

describe("concurrent overrides", () => {
  it("two analysts overriding the same case at once: one override, one clear conflict", async () => {
    const t = await tenant();
    const caseId = await submit(t, { name: "Ada Race", amount: 5000 });
    const a = await signedIn(h.app, t.tenantId, "analyst");
    const b = await signedIn(h.app, t.tenantId, "analyst");
    const pageA = await a.browser.get(`/console/cases/${caseId}`);
    await b.browser.get(`/console/cases/${caseId}`);
    const basedOn = /name="basedOn" value="(\d+)"/.exec(pageA.body)?.[1] as string;
    expect(basedOn).toBe("1");
    const answers = await Promise.all([
      a.browser.post(`/console/cases/${caseId}/decision`, { value: "approved", reason: "ok", basedOn }),
      b.browser.post(`/console/cases/${caseId}/decision`, { value: "declined", reason: "forged", basedOn }),
    ]);
    expect(answers.map((r) => r.statusCode).sort()).toEqual([303, 409]);
    const loser = answers.find((r) => r.statusCode === 409);
    expect(loser?.body).toContain("decided first");
    expect(loser?.body).toContain("Your override was not recorded");
    const record = (await h.app.inject({ url: `/cases/${caseId}`, headers: t.partner.headers })).json();
    expect(
      record.result.decisionHistory.filter((d: { source: string }) => d.source === "analyst"),
    ).toHaveLength(1);
  });
});
