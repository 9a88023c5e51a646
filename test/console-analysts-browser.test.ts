import fs from "node:fs";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "./support/app.js";
import { runCds } from "./support/cli.js";
import { type ConsoleUser, createConsoleUser } from "./support/console.js";
import { adminHeaders, createKey, createTenant, enableTags, type Partner } from "./support/fixtures.js";
import { configureWebhook, Receiver } from "./support/receiver.js";
import { amountScreen, createWorkflow, kycSubject, waitForCase } from "./support/workflows.js";

/**
 * An analyst's day in a real browser (Debian's Chromium through playwright-core): finding a
 * decided case, owning and commenting on one, bulk tagging, the webhook URL edit and the audit
 * log. Each flow also takes the screenshots in docs/console/ (UPDATE_SCREENSHOTS=1 writes them).
 */
const CHROMIUM = "/usr/bin/chromium";
const hasChromium = fs.existsSync(CHROMIUM);
if (!hasChromium) console.warn(`analyst browser tests skipped: ${CHROMIUM} is missing`);

const SHOTS =
  process.env.UPDATE_SCREENSHOTS === "1"
    ? path.resolve(import.meta.dirname, "../docs/console")
    : fs.mkdtempSync(path.join(os.tmpdir(), "cds-analyst-shots-"));

let h: TestApp;
let browser: Browser;
let base: string;
let tenantId: string;
let partner: Partner;
let receiver: Receiver;

async function submit(name: string, amount: number, customer: string): Promise<string> {
  const res = await h.app.inject({
    method: "POST",
    url: "/cases",
    headers: partner.headers,
    payload: {
      workflowId: "kyc-onboarding",
      type: "KYC",
      payload: { amount, country: "GB" },
      subject: {
        displayName: name,
        person: {
          ...kycSubject.person,
          firstName: name.split(" ")[0],
          lastName: name.split(" ")[1],
          identifiers: [{ type: "external_customer_id", value: customer }],
        },
      },
    },
  });
  if (res.statusCode !== 201) throw new Error(res.body);
  const caseId = res.json().caseId as string;
  await waitForCase(h.app, partner.headers, caseId);
  return caseId;
}

async function newPage(width = 1366, height = 900): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height }, baseURL: base });
  return context.newPage();
}

async function shoot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

async function signInAs(page: Page, user: ConsoleUser): Promise<void> {
  await page.goto("/console/sign-in");
  await page.getByLabel("Email").fill(user.email);
  await page.getByLabel("Password").fill(user.password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(/\/console\/queue/);
}

/** The case ids the page's list shows, in order. */
async function listedIds(page: Page): Promise<string[]> {
  const hrefs = await page
    .locator("a.case-link")
    .evaluateAll((links) => links.map((a) => a.getAttribute("href")));
  return hrefs.map((href) => (href ?? "").replace("/console/cases/", ""));
}

describe.skipIf(!hasChromium)("an analyst's day in Chromium", () => {
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    h = await createTestApp();
    await h.app.listen({ port: 0, host: "127.0.0.1" });
    base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
    await h.startWorker();
    receiver = await Receiver.start();
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
    });
    fs.mkdirSync(SHOTS, { recursive: true });
    tenantId = await createTenant(h.app, "Northwind Bank");
    partner = await createKey(h.app, tenantId);
    await createWorkflow(h.app, tenantId, "kyc-onboarding", amountScreen);
    await enableTags(h.app, tenantId, "vip", "fraud-ring", "pep");
    ids.grace = await submit("Grace Hopper", 400, "cust-1906");
    ids.alan = await submit("Alan Turing", 2500, "cust-1912");
    ids.ada = await submit("Ada Lovelace", 3100, "cust-1815");
    ids.ring1 = await submit("Ivan Petrov", 9000, "cust-7001");
    ids.ring2 = await submit("Olga Petrova", 9100, "cust-7002");
    ids.ring3 = await submit("Boris Petrov", 9200, "cust-7003");
  });

  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
    await h?.close();
  });

  it("finds a decided case by customer id and by name in All cases", async () => {
    const user = await createConsoleUser(h.app, tenantId, "analyst", { name: "Jane Analyst" });
    const page = await newPage();
    await signInAs(page, user);
    await page.getByRole("link", { name: "All cases" }).click();
    await page.waitForURL(/\/console\/cases$/);
    expect(await listedIds(page)).toHaveLength(6);
    await page.getByLabel("Search").fill("cust-1906");
    await page.getByRole("button", { name: "Search" }).click();
    await page.waitForURL(/q=cust-1906/);
    expect(await listedIds(page)).toEqual([ids.grace]);
    expect(await page.locator("tbody").getByText("approved").isVisible()).toBe(true);
    await page.getByLabel("Search").fill("grace hop");
    await page.getByLabel("Status").selectOption("decided");
    await page.getByRole("button", { name: "Search" }).click();
    await page.waitForURL(/status=decided/);
    expect(await listedIds(page)).toEqual([ids.grace]);
    await page.getByLabel("Name this filter").fill("Decided Hoppers");
    await page.getByRole("button", { name: "Save this filter" }).click();
    await page.waitForURL(/done=filter-saved/);
    expect(await page.getByRole("link", { name: "Decided Hoppers" }).isVisible()).toBe(true);
    await shoot(page, "all-cases");
    await page.getByRole("link", { name: "Grace Hopper" }).click();
    await page.waitForURL(new RegExp(`/console/cases/${ids.grace}`));
    await page.context().close();
  });

  it("takes a case, comments on it, then overrides it from the Mine tab", async () => {
    const user = await createConsoleUser(h.app, tenantId, "analyst", { name: "Sam Reviewer" });
    const page = await newPage();
    await signInAs(page, user);
    await page.goto(`/console/cases/${ids.alan}`);
    await page.getByRole("button", { name: "Take it" }).click();
    await page.waitForURL(/done=assigned/);
    expect(await page.getByText("You own this case.").isVisible()).toBe(true);
    await page.getByLabel("Add a comment").fill("Called the customer: the employer letter is genuine.");
    await page.getByRole("button", { name: "Comment" }).click();
    await page.waitForURL(/done=commented/);
    expect(await page.getByText("the employer letter is genuine").isVisible()).toBe(true);
    await page.getByRole("link", { name: "Mine" }).click();
    await page.waitForURL(/\/console\/mine/);
    expect(await listedIds(page)).toEqual([ids.alan]);
    await shoot(page, "mine");
    await page.getByRole("link", { name: "Alan Turing" }).click();
    await page.waitForURL(new RegExp(`/console/cases/${ids.alan}`));
    // No decision is chosen for the analyst: the form will not send without one.
    expect(await page.getByLabel("New decision").inputValue()).toBe("");
    await page.getByLabel("New decision").selectOption("approved");
    await page.getByLabel("Reason").fill("Income verified with the employer");
    await page.getByRole("button", { name: "Override the decision" }).click();
    await page.waitForURL(/done=decision/);
    await shoot(page, "case-owner-comments");
    const record = (await h.app.inject({ url: `/cases/${ids.alan}`, headers: partner.headers })).json();
    expect(record.result.decision).toMatchObject({ value: "approved", actor: `analyst:${user.userId}` });
    expect(JSON.stringify(record)).not.toContain("employer letter");
    await page.context().close();
  });

  it("tags three cases at once from All cases", async () => {
    const user = await createConsoleUser(h.app, tenantId, "analyst", { name: "Ola Bulk" });
    const page = await newPage();
    await signInAs(page, user);
    await page.goto("/console/cases?q=petrov");
    expect((await listedIds(page)).sort()).toEqual([ids.ring1, ids.ring2, ids.ring3].sort());
    for (const name of ["Ivan Petrov", "Olga Petrova", "Boris Petrov"])
      await page.getByLabel(`Choose ${name}`).check();
    await page.getByLabel("With the chosen cases").selectOption("tag");
    await page.getByLabel("Tag to add").selectOption("fraud-ring");
    await shoot(page, "bulk-actions");
    await page.getByRole("button", { name: "Apply to the chosen cases" }).click();
    await page.waitForURL(/done=tagged/);
    for (const caseId of [ids.ring1, ids.ring2, ids.ring3]) {
      const tags = (await h.app.inject({ url: `/cases/${caseId}/tags`, headers: partner.headers })).json();
      expect(JSON.stringify(tags)).toContain("fraud-ring");
    }
    await page.context().close();
  });

  it("changes a webhook endpoint's URL without touching its secret", async () => {
    await configureWebhook(h.app, adminHeaders, tenantId, {
      url: receiver.url("/hooks/old"),
      secrets: [{ secret: "a-signing-secret-of-32-characters" }],
    });
    const admin = await createConsoleUser(h.app, tenantId, "admin", { name: "Ada Admin" });
    const page = await newPage();
    await signInAs(page, admin);
    await page.goto("/console/settings/webhooks");
    await page.getByRole("link", { name: "Edit endpoint default" }).click();
    await page.waitForURL(/edit=default/);
    expect(await page.getByLabel("URL").inputValue()).toBe(receiver.url("/hooks/old"));
    await page.getByLabel("URL").fill(receiver.url("/hooks/new"));
    await shoot(page, "webhook-edit");
    await page.getByRole("button", { name: "Save endpoint" }).click();
    await page.waitForURL(/done=webhook-saved/);
    const config = (
      await h.app.inject({ url: `/admin/tenants/${tenantId}/webhooks/default`, headers: adminHeaders })
    ).json();
    expect(config).toMatchObject({ url: receiver.url("/hooks/new"), secrets: [{ id: null }] });
    await page.context().close();
  });

  it("shows a refused bulk action above the bulk form, on the same view", async () => {
    const user = await createConsoleUser(h.app, tenantId, "analyst", { name: "Kim Careful" });
    const page = await newPage();
    await signInAs(page, user);
    await page.goto("/console/cases?q=petrov");
    await page.getByLabel("With the chosen cases").selectOption("close");
    await page.getByRole("button", { name: "Apply to the chosen cases" }).click();
    const alert = page.locator("form#bulk").getByRole("alert");
    await alert.waitFor();
    expect(await alert.textContent()).toBe("Choose at least one case.");
    expect(await page.getByLabel("Search").inputValue()).toBe("petrov");
    await shoot(page, "form-error-inline");
    await page.context().close();
  });

  it("sets the review deadlines, and shows a webhook's attempts with their time and duration", async () => {
    const admin = await createConsoleUser(h.app, tenantId, "admin", { name: "Ada Admin" });
    const page = await newPage();
    await signInAs(page, admin);
    await page.goto("/console/settings");
    await page.getByRole("link", { name: "Review deadlines" }).click();
    await page.waitForURL(/\/console\/settings\/review/);
    await page.getByLabel("KYC").fill("24");
    await page.getByRole("button", { name: "Save deadlines" }).click();
    await page.waitForURL(/done=saved/);
    expect(await page.getByLabel("KYC").inputValue()).toBe("24");
    await shoot(page, "settings-review");

    await configureWebhook(h.app, adminHeaders, tenantId, {
      url: receiver.url("/hooks/log"),
      secrets: [{ secret: "a-signing-secret-of-32-characters" }],
    });
    await page.goto("/console/settings/webhooks");
    await page.getByRole("button", { name: "Send a test event" }).click();
    await page.waitForURL(/done=test-sent/);
    await receiver.waitFor(1, { path: "/hooks/log" });
    const delivered = async () =>
      (
        await h.app.inject({
          url: `/admin/tenants/${tenantId}/webhook-deliveries?eventType=webhook.test`,
          headers: adminHeaders,
        })
      ).json().deliveries?.[0]?.status;
    await expect.poll(delivered, { timeout: 20_000 }).toBe("succeeded");
    await page.goto("/console/settings/webhooks");
    const row = page.locator("tbody tr", { hasText: "webhook.test" });
    expect(await row.getByText(/\d+ ms/).isVisible()).toBe(true);
    await shoot(page, "settings-webhook-attempts");
    await page.context().close();
  });

  it("shows an override made with the CLI in the audit log, by the analyst's name", async () => {
    const analyst = await createConsoleUser(h.app, tenantId, "analyst", { name: "Rita Night-Shift" });
    const cli = await runCds(
      base,
      "case",
      "override",
      "--case",
      ids.ada as string,
      "--decision",
      "declined",
      "--actor",
      analyst.userId,
      "--reason",
      "forged payslip",
    );
    expect(cli.code, cli.stderr).toBe(0);
    const page = await newPage();
    await signInAs(page, analyst);
    await page.getByRole("link", { name: "Audit log" }).click();
    await page.getByLabel("What").selectOption("case.override");
    await page.getByRole("button", { name: "Show" }).click();
    await page.waitForURL(/action=case.override/);
    const row = page.locator("tbody tr", { hasText: "Rita Night-Shift" });
    expect(await row.count()).toBe(1);
    expect(await row.getByText("Overrode the decision").isVisible()).toBe(true);
    expect(await row.getByText("forged payslip").isVisible()).toBe(true);
    await shoot(page, "audit-log-filtered");
    const download = page.waitForEvent("download");
    await page.getByRole("link", { name: "Export CSV" }).click();
    const csv = fs.readFileSync((await (await download).path()) as string, "utf8");
    expect(csv).toContain("Rita Night-Shift");
    expect(csv).toContain(",case.override,");
    await page.context().close();
  });
});
