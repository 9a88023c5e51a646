import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "./support/app.js";
import { signedIn } from "./support/console.js";
import { adminHeaders, createKey, createTenant, type Partner } from "./support/fixtures.js";
import { configureWebhook, Receiver } from "./support/receiver.js";
import { amountScreen, createWorkflow, kycSubject, waitForCase } from "./support/workflows.js";

/** The console's small defects, each held: explicit choices, errors beside fields, the webhook edit, attempts, the front door. */

let h: TestApp;
let receiver: Receiver;

beforeAll(async () => {
  h = await createTestApp();
  await h.startWorker();
  receiver = await Receiver.start();
});

afterAll(async () => {
  await receiver.close();
  await h.close();
});

async function decidedCase(partner: Partner, amount: number): Promise<string> {
  const res = await h.app.inject({
    method: "POST",
    url: "/cases",
    headers: partner.headers,
    payload: { workflowId: "screen", type: "KYC", payload: { amount }, subject: kycSubject },
  });
  expect(res.statusCode, res.body).toBe(201);
  const caseId = res.json().caseId as string;
  await waitForCase(h.app, partner.headers, caseId);
  return caseId;
}

describe("the override form", () => {
  it("offers no decision until one is chosen, and a post without one is refused beside the field with the reason kept", async () => {
    const tenantId = await createTenant(h.app);
    const partner = await createKey(h.app, tenantId);
    await createWorkflow(h.app, tenantId, "screen", amountScreen);
    const caseId = await decidedCase(partner, 5000);
    const { browser } = await signedIn(h.app, tenantId, "analyst");
    const page = await browser.get(`/console/cases/${caseId}`);
    expect(page.body).toMatch(/<select name="value" required><option value selected>Choose…<\/option>/);
    expect(page.body).not.toMatch(/<option value="approved" selected/);

    const refused = await browser.post(`/console/cases/${caseId}/decision`, {
      value: "",
      reason: "Documents look forged",
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain('id="decision-value-error"');
    expect(refused.body).toContain("Choose the new decision.");
    expect(refused.body).toContain(">Documents look forged</textarea>");
    expect(refused.body).not.toContain("That did not work");
    const record = (await h.app.inject({ url: `/cases/${caseId}`, headers: partner.headers })).json();
    expect(record.result.decision.source).toBe("workflow");

    const noReason = await browser.post(`/console/cases/${caseId}/decision`, {
      value: "declined",
      reason: "",
    });
    expect(noReason.statusCode).toBe(400);
    expect(noReason.body).toContain('id="decision-reason-error"');
    expect(noReason.body).toMatch(/<option value="declined" selected>declined<\/option>/);
  });

  it("an information request with a malformed address is refused beside the address, the message kept", async () => {
    const tenantId = await createTenant(h.app);
    const partner = await createKey(h.app, tenantId);
    await createWorkflow(h.app, tenantId, "screen", amountScreen);
    const caseId = await decidedCase(partner, 5000);
    const { browser } = await signedIn(h.app, tenantId, "analyst");
    await browser.get(`/console/cases/${caseId}`);
    const refused = await browser.post(`/console/cases/${caseId}/rfi`, {
      to: "not-an-address",
      subject: "Proof of address",
      body: "Please send a utility bill.",
      expiresAt: "tomorrow",
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain('id="rfi-expiresAt-error"');
    expect(refused.body).toContain('value="Proof of address"');
    expect(refused.body).toContain("<details open><summary>Request information");
    const badAddress = await browser.post(`/console/cases/${caseId}/rfi`, {
      to: "not-an-address",
      subject: "Proof of address",
      body: "Please send a utility bill.",
    });
    expect(badAddress.statusCode).toBe(400);
    expect(badAddress.body).toContain('id="rfi-to-error"');
  });
});

describe("the webhook endpoint form", () => {
  it("edits the URL of an endpoint set with one unnamed secret, pre-filled, without asking for the secret", async () => {
    const tenantId = await createTenant(h.app);
    // What `cds webhook set --secret …` stores: one secret without an id.
    await configureWebhook(h.app, adminHeaders, tenantId, {
      url: receiver.url("/hooks/old"),
      secrets: [{ secret: "a-signing-secret-of-32-characters" }],
    });
    const { browser } = await signedIn(h.app, tenantId, "admin");
    const form = await browser.get("/console/settings/webhooks?edit=default");
    expect(form.statusCode).toBe(200);
    expect(form.body).toContain(`value="${receiver.url("/hooks/old")}"`);
    expect(form.body).toContain('<input type="text" name="secretId" value/>');
    expect(form.body).not.toMatch(/name="secretId"[^>]*required/);

    const saved = await browser.post("/console/settings/webhooks", {
      webhookKey: "default",
      url: receiver.url("/hooks/new"),
      secretId: "",
      secret: "",
      maxAttempts: "5",
      timeoutMs: "10000",
    });
    expect(saved.statusCode, saved.body).toBe(303);
    const config = (
      await h.app.inject({ url: `/admin/tenants/${tenantId}/webhooks/default`, headers: adminHeaders })
    ).json();
    expect(config).toMatchObject({
      url: receiver.url("/hooks/new"),
      secrets: [{ id: null }],
      activeSecretId: null,
    });

    // The stored secret still signs: a test event reaches the new URL, signed, with no secret id.
    expect((await browser.post("/console/settings/webhooks/default/test")).statusCode).toBe(303);
    const [arrived] = await receiver.waitFor(1, { path: "/hooks/new" });
    expect(arrived?.headers["x-service-signature"] ?? arrived?.headers["x-signature"]).toBeTruthy();
    expect(arrived?.headers["x-service-secret-id"]).toBeUndefined();
  });

  it("shows a refused URL beside the URL field, with the typed values kept", async () => {
    const tenantId = await createTenant(h.app);
    const { browser } = await signedIn(h.app, tenantId, "admin");
    await browser.get("/console/settings/webhooks");
    const refused = await browser.post("/console/settings/webhooks", {
      webhookKey: "fraud",
      url: "ftp://nope.example",
      secretId: "",
      secret: "short",
      maxAttempts: "many",
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain('id="webhook-maxAttempts-error"');
    const again = await browser.post("/console/settings/webhooks", {
      webhookKey: "fraud",
      url: "ftp://nope.example",
      secretId: "",
      secret: "short",
    });
    expect(again.statusCode).toBe(400);
    expect(again.body).toContain('id="webhook-url-error"');
    expect(again.body).toContain('id="webhook-secret-error"');
    expect(again.body).toContain('value="fraud"');
    expect(again.body).not.toContain("That did not work");
    // A new endpoint without any secret is refused beside the secret.
    const bare = await browser.post("/console/settings/webhooks", {
      webhookKey: "fraud",
      url: receiver.url("/hooks/fraud"),
    });
    expect(bare.statusCode).toBe(400);
    expect(bare.body).toContain('id="webhook-secret-error"');
  });

  it("lists every delivery attempt with its time, duration and answer, each said once", async () => {
    const tenantId = await createTenant(h.app);
    receiver.on("/hooks/failing", { status: 500 });
    await configureWebhook(h.app, adminHeaders, tenantId, {
      url: receiver.url("/hooks/failing"),
      maxAttempts: 1,
    });
    const { browser } = await signedIn(h.app, tenantId, "admin");
    await browser.get("/console/settings/webhooks");
    expect((await browser.post("/console/settings/webhooks/default/test")).statusCode).toBe(303);
    await receiver.waitFor(1, { path: "/hooks/failing" });
    await expect
      .poll(async () => (await browser.get("/console/settings/webhooks")).body, { timeout: 15_000 })
      .toMatch(
        /<ol class="attempts small"><li><span class="muted">#1<\/span> <time[^>]*>[^<]+<\/time> · \d+ ms · HTTP 500<\/li><\/ol>/,
      );
    expect((await browser.get("/console/settings/webhooks")).body).not.toContain("HTTP 500 HTTP 500");
  });
});

describe("the front door", () => {
  it("GET / leads to the console, and the favicon is an icon on every page", async () => {
    const root = await h.app.inject({ url: "/" });
    expect(root.statusCode).toBe(302);
    expect(root.headers.location).toBe("/console");
    const icon = await h.app.inject({ url: "/favicon.ico" });
    expect(icon.statusCode).toBe(200);
    expect(icon.headers["content-type"]).toBe("image/svg+xml");
    expect(icon.body).toContain("<svg");
    const signIn = await h.app.inject({ url: "/console/sign-in" });
    const href = /<link rel="icon" type="image\/svg\+xml" href="([^"]+)"/.exec(signIn.body)?.[1];
    expect(href).toMatch(/^\/console\/assets\/favicon\.svg\?v=/);
    const asset = await h.app.inject({ url: href as string });
    expect(asset.statusCode).toBe(200);
    expect(asset.headers["content-type"]).toBe("image/svg+xml");
  });
});
