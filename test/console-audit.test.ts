import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "./support/app.js";
import { failAuditOf as failAudit } from "./support/audit.js";
import { runCds } from "./support/cli.js";
import { createConsoleUser, signedIn, signIn } from "./support/console.js";
import { adminHeaders, createKey, createTenant, enableTags, type Partner } from "./support/fixtures.js";
import { withInjectedFailure } from "./support/openapi-check.js";
import { raiseRfi } from "./support/rfi.js";
import { amountScreen, createWorkflow, kycSubject, waitForCase } from "./support/workflows.js";

/**
 * The audit log covers every change to a tenant's cases whatever its door (console, operator API
 * and CLI with the given actor, partner API as `apikey:<keyId>`), each row written in the
 * transaction of its change; the console shows names, filters and exports it.
 */

let h: TestApp;
let url: string;

beforeAll(async () => {
  h = await createTestApp();
  await h.startWorker();
  await h.app.listen({ port: 0, host: "127.0.0.1" });
  url = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await h.close();
});

async function decidedCase(partner: Partner): Promise<string> {
  const res = await h.app.inject({
    method: "POST",
    url: "/cases",
    headers: partner.headers,
    payload: { workflowId: "screen", type: "KYC", payload: { amount: 5000 }, subject: kycSubject },
  });
  expect(res.statusCode, res.body).toBe(201);
  const caseId = res.json().caseId as string;
  await waitForCase(h.app, partner.headers, caseId);
  return caseId;
}

async function auditOf(tenantId: string) {
  return h.ctx.db.root
    .selectFrom("console_audit")
    .select(["actor", "action", "target"])
    .where("tenant_id", "=", tenantId)
    .where("action", "like", "case.%")
    .orderBy("id")
    .execute();
}

const failAuditOf = (tenantId: string, action: string) => failAudit(h.ctx, tenantId, action);

describe("the audit log, whatever the door", () => {
  it("records a CLI override with the given actor, named, and the partner's tags and requests as its key", async () => {
    const tenantId = await createTenant(h.app);
    const partner = await createKey(h.app, tenantId);
    await createWorkflow(h.app, tenantId, "screen", amountScreen);
    await enableTags(h.app, tenantId, "vip");
    const caseId = await decidedCase(partner);
    const { browser, user } = await signedIn(h.app, tenantId, "analyst");

    const cli = await runCds(
      url,
      "case",
      "override",
      "--case",
      caseId,
      "--decision",
      "declined",
      "--actor",
      user.userId,
      "--reason",
      "forged passport",
    );
    expect(cli.code, cli.stderr).toBe(0);
    const tag = await h.app.inject({
      method: "POST",
      url: `/cases/${caseId}/tags`,
      headers: partner.headers,
      payload: { tag: "vip" },
    });
    expect(tag.statusCode).toBe(201);
    const untag = await h.app.inject({
      method: "DELETE",
      url: `/cases/${caseId}/tags?tag=vip`,
      headers: partner.headers,
    });
    expect(untag.statusCode).toBe(204);
    const rfi = await h.app.inject({
      method: "POST",
      url: `/cases/${caseId}/rfi`,
      headers: partner.headers,
      payload: { to: "ada@example.com", subject: "Proof of address", body: "Please send one." },
    });
    expect(rfi.statusCode, rfi.body).toBe(201);

    const keyActor = `apikey:${partner.keyId}`;
    expect(await auditOf(tenantId)).toEqual([
      { actor: `operator:${user.userId}`, action: "case.override", target: `case:${caseId}` },
      { actor: keyActor, action: "case.tag_add", target: `case:${caseId}` },
      { actor: keyActor, action: "case.tag_remove", target: `case:${caseId}` },
    ]);
    const raised = await h.ctx.db.root
      .selectFrom("console_audit")
      .select("actor")
      .where("tenant_id", "=", tenantId)
      .where("action", "=", "rfi.raise")
      .execute();
    expect(raised).toEqual([{ actor: keyActor }]);

    // Shown with names, filtered by action and by case, and exported.
    const page = await browser.get(`/console/audit?action=case.override&caseId=${caseId}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("Overrode the decision");
    expect(page.body).toMatch(
      new RegExp(`<span title="operator:${user.userId}">Analyst \\d+ \\(operator API\\)</span>`),
    );
    expect(page.body).not.toContain("Added a tag</td>");
    const byKey = await browser.get(`/console/audit?actor=${encodeURIComponent(keyActor)}`);
    expect(byKey.body).toContain("Added a tag");
    expect(byKey.body).not.toContain("Overrode the decision</td>");
    const csv = await browser.get(`/console/audit.csv?caseId=${caseId}`);
    expect(csv.statusCode).toBe(200);
    expect(csv.headers["content-type"]).toBe("text/csv; charset=utf-8");
    expect(csv.headers["content-disposition"]).toBe('attachment; filename="audit-log.csv"');
    const lines = csv.body.trim().split("\n");
    expect(lines[0]).toBe("at,actor,actor_name,action,action_name,target,before,after");
    expect(lines.filter((l) => l.includes(",case.override,"))).toHaveLength(1);
    expect(lines.some((l) => l.includes(`,${keyActor},`) && l.includes(",case.tag_add,"))).toBe(true);
    for (const bad of ["action=drop.table", "caseId=x", "from=yesterday"])
      expect((await browser.get(`/console/audit?${bad}`)).statusCode, bad).toBe(400);
  });

  it("writes no row of another tenant's changes, and exports a formula as text", async () => {
    const tenantId = await createTenant(h.app);
    const partner = await createKey(h.app, tenantId);
    await createWorkflow(h.app, tenantId, "screen", amountScreen);
    const caseId = await decidedCase(partner);
    // A name a spreadsheet would run as a formula.
    const user = await createConsoleUser(h.app, tenantId, "analyst", { name: '=HYPERLINK("http://evil")' });
    const browser = await signIn(h.app, user);
    await browser.get(`/console/cases/${caseId}`);
    expect((await browser.post(`/console/cases/${caseId}/comments`, { body: "checked" })).statusCode).toBe(
      303,
    );
    const csv = await browser.get("/console/audit.csv?action=case.comment");
    expect(csv.body).toContain(`,"'=HYPERLINK(""http://evil"")",case.comment,Commented,`);
    const stranger = await signedIn(h.app, await createTenant(h.app, "Other"), "admin");
    const theirs = await stranger.browser.get(`/console/audit.csv?caseId=${caseId}`);
    expect(theirs.body.trim()).toBe("at,actor,actor_name,action,action_name,target,before,after");
  });
});

describe("audit rows in the change's transaction", () => {
  it("an override, a tag and an information request whose audit row fails leave neither the change nor the row", async () => {
    const tenantId = await createTenant(h.app);
    const partner = await createKey(h.app, tenantId);
    await createWorkflow(h.app, tenantId, "screen", amountScreen);
    await enableTags(h.app, tenantId, "vip");
    const caseId = await decidedCase(partner);
    const { user } = await signedIn(h.app, tenantId, "analyst");

    let restore = await failAuditOf(tenantId, "case.override");
    try {
      const res = await withInjectedFailure(() =>
        h.app.inject({
          method: "POST",
          url: `/admin/cases/${caseId}/decision`,
          headers: adminHeaders,
          payload: { value: "approved", actor: user.userId, reason: "fine" },
        }),
      );
      expect(res.statusCode).toBe(500);
    } finally {
      await restore();
    }
    restore = await failAuditOf(tenantId, "case.tag_add");
    try {
      const res = await withInjectedFailure(() =>
        h.app.inject({
          method: "POST",
          url: `/cases/${caseId}/tags`,
          headers: partner.headers,
          payload: { tag: "vip" },
        }),
      );
      expect(res.statusCode).toBe(500);
    } finally {
      await restore();
    }
    restore = await failAuditOf(tenantId, "rfi.raise");
    try {
      const res = await withInjectedFailure(() =>
        h.app.inject({
          method: "POST",
          url: `/cases/${caseId}/rfi`,
          headers: partner.headers,
          payload: { to: "ada@example.com", subject: "Proof", body: "Please." },
        }),
      );
      expect(res.statusCode).toBe(500);
    } finally {
      await restore();
    }
    const record = (await h.app.inject({ url: `/cases/${caseId}`, headers: partner.headers })).json();
    expect(record.result.decisionHistory).toHaveLength(1);
    expect(record.result.decision.source).toBe("workflow");
    expect(record.tags).toEqual([]);
    expect(record.informationRequests).toEqual([]);
    expect(await auditOf(tenantId)).toEqual([]);
    const events = await h.ctx.db.root
      .selectFrom("events")
      .select("event_type")
      .where("case_id", "=", caseId)
      .where("event_type", "in", ["case.decision_overridden", "case.information_requested"])
      .execute();
    expect(events).toEqual([]);
  });
});

describe("console changes made through other features' services", () => {
  it("settings and information-request changes whose audit row fails leave neither the change nor the row", async () => {
    const tenantId = await createTenant(h.app);
    const partner = await createKey(h.app, tenantId);
    await createWorkflow(h.app, tenantId, "screen", amountScreen);
    const caseId = await decidedCase(partner);
    const { rfiId } = await raiseRfi(h.app, partner, caseId);
    const { browser } = await signedIn(h.app, tenantId, "admin");
    await browser.get("/console/settings/webhooks");
    const webhook = {
      webhookKey: "default",
      url: "http://127.0.0.1:9/hooks",
      secretId: "s1",
      secret: "a-signing-secret-of-32-characters",
    };
    // What these changes stand on, made with their audit rows.
    expect((await browser.post("/console/settings/webhooks", webhook)).statusCode).toBe(303);
    expect((await browser.post("/console/settings/webhooks/default/test")).statusCode).toBe(303);
    const rows = async () =>
      h.ctx.db.root
        .selectFrom("console_audit")
        .select("action")
        .where("tenant_id", "=", tenantId)
        .orderBy("id")
        .execute();
    const audited = (await rows()).map((r) => r.action);
    expect(audited).toEqual(expect.arrayContaining(["rfi.raise", "webhook.set", "webhook.test"]));
    const delivery = await h.ctx.db.root
      .selectFrom("webhook_deliveries")
      .select("id")
      .where("tenant_id", "=", tenantId)
      .executeTakeFirstOrThrow();
    const countOf = async (table: "webhook_deliveries" | "events") =>
      Number(
        (
          await h.ctx.db.root
            .selectFrom(table)
            .select((eb) => eb.fn.countAll().as("n"))
            .where("tenant_id", "=", tenantId)
            .executeTakeFirstOrThrow()
        ).n,
      );
    const deliveriesBefore = await countOf("webhook_deliveries");
    const eventsBefore = await countOf("events");

    const failing: Array<[action: string, url: string, form?: Record<string, string>]> = [
      ["apikey.create", "/console/settings/api-keys", { name: "never", scopes: "cases:read" }],
      ["apikey.delete", `/console/settings/api-keys/${partner.keyId}/delete`],
      ["tag_option.set", "/console/settings/tags", { tag: "never", enabled: "true" }],
      ["webhook.set", "/console/settings/webhooks", { ...webhook, webhookKey: "never" }],
      ["webhook.delete", "/console/settings/webhooks/default/delete"],
      ["webhook.test", "/console/settings/webhooks/default/test"],
      ["webhook.redeliver", `/console/settings/webhooks/deliveries/${delivery.id}/redeliver`],
      ["rfi.remind", `/console/cases/${caseId}/rfi/${rfiId}/remind`],
      ["rfi.answer", `/console/cases/${caseId}/rfi/${rfiId}/answer`, { fieldKey: "note", fieldValue: "x" }],
      ["rfi.cancel", `/console/cases/${caseId}/rfi/${rfiId}/cancel`],
    ];
    for (const [action, url, form] of failing) {
      const restore = await failAuditOf(tenantId, action);
      try {
        const res = await withInjectedFailure(() => browser.post(url, form));
        expect(res.statusCode, `${action}: ${res.body.slice(0, 200)}`).toBe(500);
      } finally {
        await restore();
      }
    }

    expect((await rows()).map((r) => r.action)).toEqual(audited);
    const keys = (
      await h.app.inject({ url: `/admin/tenants/${tenantId}/api-keys`, headers: adminHeaders })
    ).json();
    expect(JSON.stringify(keys)).not.toContain("never");
    expect(JSON.stringify(keys)).toContain(partner.keyId);
    const options = (
      await h.app.inject({ url: `/admin/tenants/${tenantId}/tag-options`, headers: adminHeaders })
    ).json();
    expect(JSON.stringify(options)).not.toContain("never");
    const hooks = (
      await h.app.inject({ url: `/admin/tenants/${tenantId}/webhooks`, headers: adminHeaders })
    ).json();
    expect(JSON.stringify(hooks)).toContain('"default"');
    expect(JSON.stringify(hooks)).not.toContain('"never"');
    expect(await countOf("webhook_deliveries")).toBe(deliveriesBefore);
    expect(await countOf("events")).toBe(eventsBefore);
    const request = (
      await h.app.inject({ url: `/cases/${caseId}/rfi/${rfiId}`, headers: partner.headers })
    ).json();
    expect(request).toMatchObject({ status: "pending", reminderCount: 0 });
  });
});
