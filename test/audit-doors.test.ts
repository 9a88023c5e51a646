import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sendTestEvent } from "../src/modules/webhooks/index.js";
import { createTestApp, type TestApp } from "./support/app.js";
import { failAuditOf } from "./support/audit.js";
import { runCds } from "./support/cli.js";
import { signedIn } from "./support/console.js";
import { adminHeaders, createKey, createStoredCase, createTenant } from "./support/fixtures.js";
import { withInjectedFailure } from "./support/openapi-check.js";
import { answerRfi, openRequest } from "./support/rfi.js";

/**
 * Every change to a tenant's data is audited whatever its door: the operator API and the CLI as
 * `operator` (`operator:<actor>` where the request names one), the partner API as
 * `apikey:<keyId>`; each row in its change's transaction, and no secret in it.
 */

let h: TestApp;
let url: string;

beforeAll(async () => {
  h = await createTestApp();
  await h.app.listen({ port: 0, host: "127.0.0.1" });
  url = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await h.close();
});

const WEBHOOK_SECRET = "webhook-secret-value-never-audited-0001";
const PROVIDER_KEY = "provider-credential-never-audited-0001";

function auditRows(tenantId: string) {
  return h.ctx.db.root
    .selectFrom("console_audit")
    .select(["actor", "action", "target", "before", "after"])
    .where("tenant_id", "=", tenantId)
    .orderBy("id")
    .execute();
}

function admin(method: "PUT" | "POST" | "DELETE", path: string, payload?: Record<string, unknown>) {
  return h.app.inject({ method, url: path, headers: adminHeaders, ...(payload ? { payload } : {}) });
}

const webhook = {
  url: "http://127.0.0.1:9/hooks",
  secrets: [{ id: "s1", secret: WEBHOOK_SECRET }],
  activeSecretId: "s1",
};
const provider = { baseUrl: "https://screening.example", credentials: { apiKey: PROVIDER_KEY } };

describe("operator API and CLI changes", () => {
  it("are audited as the operator, with the actor the request names, and no secret", async () => {
    const t = await createTenant(h.app);
    const expectOk = async (res: { statusCode: number; body: string }, status = 200) =>
      expect(res.statusCode, res.body).toBe(status);

    await expectOk(await admin("PUT", `/admin/tenants/${t}/webhooks/default`, webhook));
    const tag = await runCds(url, "tag-option", "set", "--tenant", t, "--tag", "vip");
    expect(tag.code, tag.stderr).toBe(0);
    const created = await admin("POST", `/admin/tenants/${t}/api-keys`, {
      name: "ops",
      scopes: ["cases:read"],
    });
    await expectOk(created, 201);
    const { keyId, key } = created.json() as { keyId: string; key: string };
    await expectOk(await admin("DELETE", `/admin/tenants/${t}/api-keys/${keyId}`), 204);
    await expectOk(await admin("PUT", `/admin/tenants/${t}/providers/opensanctions`, provider));
    await expectOk(await admin("DELETE", `/admin/tenants/${t}/providers/opensanctions`), 204);

    const caseId = await createStoredCase(h.ctx, t, "in_review");
    const message = { to: "ada@example.com", subject: "Proof", body: "Please." };
    const raised = await admin("POST", `/admin/cases/${caseId}/rfi`, { ...message, actor: "u-1" });
    await expectOk(raised, 201);
    const rfiId = raised.json().rfiId as string;
    await expectOk(await admin("POST", `/admin/cases/${caseId}/rfi/${rfiId}/remind`));
    await expectOk(await admin("POST", `/admin/cases/${caseId}/rfi/${rfiId}/cancel`, { actor: "u-1" }));
    const second = await admin("POST", `/admin/cases/${caseId}/rfi`, { ...message, actor: "u-1" });
    const answeredId = second.json().rfiId as string;
    await expectOk(
      await admin("POST", `/admin/cases/${caseId}/rfi/${answeredId}/answer`, {
        fields: [{ key: "note", value: "seen" }],
        actor: "u-2",
      }),
    );
    const closed = await runCds(url, "case", "close", "--case", caseId, "--actor", "u-3");
    expect(closed.code, closed.stderr).toBe(0);
    await expectOk(await admin("DELETE", `/admin/tenants/${t}/webhooks/default`), 204);
    const definition = {
      inputSchema: { type: "object" },
      start: "end",
      nodes: [{ id: "end", type: "decision", decision: "approved" }],
    };
    await expectOk(await admin("POST", `/admin/tenants/${t}/workflows/audited/versions`, definition), 201);

    const rows = await auditRows(t);
    expect(rows.map(({ actor, action, target }) => ({ actor, action, target }))).toEqual([
      { actor: "operator", action: "webhook.set", target: "webhook:default" },
      { actor: "operator", action: "tag_option.set", target: "tag:vip" },
      { actor: "operator", action: "apikey.create", target: `apikey:${keyId}` },
      { actor: "operator", action: "apikey.delete", target: `apikey:${keyId}` },
      { actor: "operator", action: "provider.set", target: "provider:opensanctions" },
      { actor: "operator", action: "provider.delete", target: "provider:opensanctions" },
      { actor: "operator:u-1", action: "rfi.raise", target: `case:${caseId}` },
      { actor: "operator", action: "rfi.remind", target: `rfi:${rfiId}` },
      { actor: "operator:u-1", action: "rfi.cancel", target: `rfi:${rfiId}` },
      { actor: "operator:u-1", action: "rfi.raise", target: `case:${caseId}` },
      { actor: "operator:u-2", action: "rfi.answer", target: `rfi:${answeredId}` },
      { actor: "operator:u-3", action: "case.close", target: `case:${caseId}` },
      { actor: "operator", action: "webhook.delete", target: "webhook:default" },
      { actor: "operator", action: "workflow.version", target: "workflow:audited" },
    ]);
    // What changed, with before and after, never a secret's value.
    const byAction = new Map(rows.map((r) => [r.action, r]));
    expect(byAction.get("webhook.set")?.after).toMatchObject({ url: webhook.url, secrets: [{ id: "s1" }] });
    expect(byAction.get("provider.set")).toMatchObject({
      before: null,
      after: { baseUrl: provider.baseUrl, credentials: "replaced" },
    });
    expect(byAction.get("tag_option.set")?.after).toEqual({ enabled: true });
    const text = JSON.stringify(rows);
    for (const secret of [WEBHOOK_SECRET, PROVIDER_KEY, key]) expect(text).not.toContain(secret);
    expect(text).not.toContain("/providers/opensanctions/webhooks/");

    // The console names the operator's changes and exports them with their names.
    const { browser } = await signedIn(h.app, t, "admin");
    const page = await browser.get("/console/audit?action=provider.set");
    expect(page.body).toContain("Configured a provider");
    expect(page.body).toContain('<option value="provider.delete">');
    const csv = await browser.get("/console/audit.csv?actor=operator%3Au-2");
    const lines = csv.body.trim().split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain(
      ",operator:u-2,u-2 (operator API),rfi.answer,Answered an information request,",
    );
  });
});

describe("an operator's redelivery", () => {
  it("is audited in the delivery's tenant, as the operator, and a redelivery of the failed ones once", async () => {
    const t = await createTenant(h.app);
    expect((await admin("PUT", `/admin/tenants/${t}/webhooks/default`, webhook)).statusCode).toBe(200);
    await sendTestEvent(h.ctx, t, "default");
    const delivery = await h.ctx.db.root
      .selectFrom("webhook_deliveries")
      .select("id")
      .where("tenant_id", "=", t)
      .executeTakeFirstOrThrow();
    const res = await admin("POST", `/admin/webhook-deliveries/${delivery.id}/redeliver`);
    expect(res.statusCode, res.body).toBe(202);
    await h.ctx.db.root
      .updateTable("webhook_deliveries")
      .set({ status: "failed" })
      .where("tenant_id", "=", t)
      .execute();
    const since = new Date(Date.now() - 3_600_000).toISOString();
    const failed = await admin("POST", `/admin/tenants/${t}/webhook-deliveries/redeliver-failed`, { since });
    expect(failed.statusCode, failed.body).toBe(202);
    expect(failed.json().redelivered).toBeGreaterThanOrEqual(1);
    const again = await admin("POST", `/admin/tenants/${t}/webhook-deliveries/redeliver-failed`, { since });
    expect(again.json().redelivered).toBe(0);
    const all = (await auditRows(t)).filter((r) => r.action === "webhook.redeliver_failed");
    expect(all).toEqual([
      {
        actor: "operator",
        action: "webhook.redeliver_failed",
        target: "webhooks",
        before: null,
        after: { since, redelivered: failed.json().redelivered },
      },
    ]);
    const rows = (await auditRows(t)).filter((r) => r.action === "webhook.redeliver");
    expect(rows).toEqual([
      {
        actor: "operator",
        action: "webhook.redeliver",
        target: `delivery:${delivery.id}`,
        before: { status: expect.any(String) },
        after: { deliveryId: res.json().deliveryId, webhookId: res.json().webhookId },
      },
    ]);
  });
});

describe("partner API changes", () => {
  it("are audited as the partner's key: its answers and its customer attributes", async () => {
    const { partner, caseId, rfiId } = await openRequest(h.app, h.ctx);
    const answered = await answerRfi(h.app, partner, caseId, rfiId, {
      fields: [{ key: "note", value: "x" }],
    });
    expect(answered.statusCode, answered.body).toBe(200);
    const attributes = (values: Record<string, unknown>) =>
      h.app.inject({
        method: "POST",
        url: "/customer-attributes",
        headers: partner.headers,
        payload: { externalCustomerId: "cust-1", attributes: values },
      });
    expect((await attributes({ tier: "gold", score: 3 })).statusCode).toBe(200);
    expect((await attributes({ tier: "platinum", score: null })).statusCode).toBe(200);

    const actor = `apikey:${partner.keyId}`;
    const rows = (await auditRows(partner.tenantId)).filter((r) => r.actor === actor);
    expect(rows.map(({ action, target, before, after }) => ({ action, target, before, after }))).toEqual([
      { action: "rfi.raise", target: `case:${caseId}`, before: null, after: expect.any(Object) },
      {
        action: "rfi.answer",
        target: `rfi:${rfiId}`,
        before: { status: "pending" },
        after: { status: "answered", fieldCount: 1, documentCount: 0 },
      },
      {
        action: "customer.attributes",
        target: "customer:cust-1",
        before: { tier: null, score: null },
        after: { tier: "gold", score: 3 },
      },
      {
        action: "customer.attributes",
        target: "customer:cust-1",
        before: { tier: "gold", score: 3 },
        after: { tier: "platinum", score: null },
      },
    ]);
  });
});

describe("an audit row that fails", () => {
  it("leaves neither the change nor the row: operator webhook and provider configuration, partner answer and attributes", async () => {
    const t = await createTenant(h.app);
    const partner = await createKey(h.app, t);
    const { caseId, rfiId } = await openRequest(h.app, h.ctx, partner);
    const before = (await auditRows(t)).map((r) => r.action);

    const failing: Array<[action: string, request: () => Promise<{ statusCode: number }>]> = [
      ["webhook.set", () => admin("PUT", `/admin/tenants/${t}/webhooks/default`, webhook)],
      ["provider.set", () => admin("PUT", `/admin/tenants/${t}/providers/opensanctions`, provider)],
      [
        "rfi.answer",
        () => answerRfi(h.app, partner, caseId, rfiId, { fields: [{ key: "note", value: "x" }] }),
      ],
      [
        "customer.attributes",
        () =>
          h.app.inject({
            method: "POST",
            url: "/customer-attributes",
            headers: partner.headers,
            payload: { externalCustomerId: "cust-1", attributes: { tier: "gold" } },
          }),
      ],
    ];
    for (const [action, request] of failing) {
      const restore = await failAuditOf(h.ctx, t, action);
      try {
        expect((await withInjectedFailure(request)).statusCode, action).toBe(500);
      } finally {
        await restore();
      }
    }

    expect((await auditRows(t)).map((r) => r.action)).toEqual(before);
    const get = (path: string, headers: Record<string, string> = adminHeaders) =>
      h.app.inject({ url: path, headers });
    expect((await get(`/admin/tenants/${t}/webhooks`)).json()).toEqual({ webhooks: [] });
    expect((await get(`/admin/tenants/${t}/providers`)).json()).toEqual({ providers: [] });
    expect((await get(`/cases/${caseId}/rfi/${rfiId}`, partner.headers)).json()).toMatchObject({
      status: "pending",
    });
    const answeredEvents = await h.ctx.db.root
      .selectFrom("events")
      .select("event_type")
      .where("case_id", "=", caseId)
      .where("event_type", "=", "case.rfi_answered")
      .execute();
    expect(answeredEvents).toEqual([]);
    const stored = await h.ctx.db.root
      .selectFrom("customer_attributes")
      .selectAll()
      .where("tenant_id", "=", t)
      .execute();
    expect(stored).toEqual([]);
  });
});
