import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "./support/app.js";
import { createConsoleUser } from "./support/console.js";
import { adminHeaders, createKey, createTenant, enableTags, type Partner } from "./support/fixtures.js";
import {
  amountScreen,
  createWorkflow,
  kycSubject,
  riskScore,
  transactionSubject,
  waitForCase,
} from "./support/workflows.js";

/**
 * The console in a real browser: Debian's Chromium driven by playwright-core. Each flow also
 * takes the screenshots in docs/console/.
 */
const CHROMIUM = "/usr/bin/chromium";
const hasChromium = fs.existsSync(CHROMIUM);
if (!hasChromium)
  console.warn(`console browser tests skipped: ${CHROMIUM} is missing (apt-get install -y chromium)`);

// Every run takes the screenshots; UPDATE_SCREENSHOTS=1 writes them over the documented ones in
// docs/console/, other runs leave the work tree alone.
const SHOTS =
  process.env.UPDATE_SCREENSHOTS === "1"
    ? path.resolve(import.meta.dirname, "../docs/console")
    : fs.mkdtempSync(path.join(os.tmpdir(), "cds-console-shots-"));

let h: TestApp;
let browser: Browser;
let base: string;
let tenantId: string;
let partner: Partner;
const caseIds: string[] = [];

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function submit(type: "KYC" | "Transaction", name: string, amount: number, tags: string[] = []) {
  const subject =
    type === "KYC"
      ? {
          ...kycSubject,
          displayName: name,
          person: { ...kycSubject.person, firstName: name.split(" ")[0], lastName: name.split(" ")[1] },
        }
      : {
          ...transactionSubject,
          displayName: name,
          transaction: { ...transactionSubject.transaction, amount },
        };
  const res = await h.app.inject({
    method: "POST",
    url: "/cases",
    headers: partner.headers,
    payload: {
      workflowId: type === "KYC" ? "kyc-onboarding" : "payment-screening",
      type,
      eventTimestamp: new Date().toISOString(),
      payload: { amount, country: "GB" },
      subject,
      metadata: { channel: "mobile-app", branch: "London" },
    },
  });
  if (res.statusCode !== 201) throw new Error(res.body);
  const caseId = res.json().caseId as string;
  await waitForCase(h.app, partner.headers, caseId);
  for (const tag of tags) {
    await h.app.inject({
      method: "POST",
      url: `/cases/${caseId}/tags`,
      headers: partner.headers,
      payload: { tag },
    });
  }
  caseIds.push(caseId);
  return caseId;
}

async function newPage(width = 1366, height = 900): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height }, baseURL: base });
  return context.newPage();
}

async function shoot(page: Page, name: string, fullPage = true): Promise<void> {
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage });
}

/** Signs in through the sign-in page as the user. */
async function signInAs(page: Page, user: { email: string; password: string }): Promise<void> {
  await page.goto("/console/sign-in");
  await page.getByLabel("Email").fill(user.email);
  await page.getByLabel("Password").fill(user.password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(/\/console\/queue/);
}

describe.skipIf(!hasChromium)("the console in Chromium", () => {
  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    h = await createTestApp({ publicUrl: base });
    await h.app.listen({ port, host: "127.0.0.1" });
    await h.startWorker();
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
      ],
    });
    fs.mkdirSync(SHOTS, { recursive: true });
    tenantId = await createTenant(h.app, "Northwind Bank");
    partner = await createKey(h.app, tenantId);
    await createWorkflow(h.app, tenantId, "payment-screening", riskScore);
    await createWorkflow(h.app, tenantId, "kyc-onboarding", amountScreen);
    await enableTags(h.app, tenantId, "vip", "fraud-ring", "pep");
    await submit("Transaction", "Payment 4471 to Aurora Ltd", 18_500, ["vip"]);
    await submit("KYC", "Grace Hopper", 2_500);
    await submit("Transaction", "Wire 9902 to Meridian Holdings", 250_000, ["fraud-ring"]);
    await submit("KYC", "Alan Turing", 1_200, ["pep"]);
    await submit("Transaction", "Card payment 5512", 4_300);
    await submit("Transaction", "Payment 120 to Corner Shop", 120);
  });

  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  it("sets a password from the setup link and signs in", async () => {
    const user = await createConsoleUser(h.app, tenantId, "analyst", {
      setPassword: false,
      name: "Jane Analyst",
      email: "jane@northwind.example",
    });
    const page = await newPage();
    await page.goto(user.setupUrl);
    await expect.poll(() => page.getByRole("heading", { name: "Set your password" }).isVisible()).toBe(true);
    await page.getByLabel("New password").fill(user.password);
    await page.getByLabel("Repeat the password").fill(user.password);
    await page.getByRole("button", { name: "Set password" }).click();
    await page.waitForURL(/\/console\/sign-in\?done=password/);
    await expect.poll(() => page.getByText("Your password is set").isVisible()).toBe(true);
    await page.getByLabel("Email").fill(user.email);
    await page.getByLabel("Password").fill(user.password);
    await shoot(page, "sign-in", false);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(/\/console\/queue/);
    expect(await page.getByRole("heading", { name: "Review queue" }).isVisible()).toBe(true);
    await page.context().close();
  });

  it("goes from the queue to a case and overrides the decision with a reason", async () => {
    const user = await createConsoleUser(h.app, tenantId, "analyst", {
      name: "Sam Reviewer",
      email: "sam@northwind.example",
    });
    const page = await newPage();
    await signInAs(page, user);
    const rows = page.locator("table[data-keyboard] tbody tr");
    expect(await rows.count()).toBe(5);
    await shoot(page, "queue");
    await page.keyboard.press("j");
    await page.keyboard.press("j");
    await page.keyboard.press("Enter");
    await page.waitForURL(/\/console\/cases\//);
    const caseId = page.url().split("/console/cases/")[1] as string;
    expect(caseId).toBe(caseIds[1]);
    await page.getByLabel("New decision").selectOption("approved");
    await page.getByLabel("Reason").fill("Identity documents verified by phone");
    await page.getByRole("button", { name: "Override the decision" }).click();
    await page.waitForURL(/done=decision/);
    expect(await page.getByText("The decision was overridden.").isVisible()).toBe(true);
    const record = (await h.app.inject({ url: `/cases/${caseId}`, headers: partner.headers })).json();
    expect(record.result.decision).toMatchObject({
      value: "approved",
      source: "analyst",
      actor: `analyst:${user.userId}`,
      reason: "Identity documents verified by phone",
    });
    await page.context().close();
  });

  it("raises an information request, answers it with an uploaded PDF and shows the document", async () => {
    const user = await createConsoleUser(h.app, tenantId, "analyst", {
      name: "Priya Analyst",
      email: "priya@northwind.example",
    });
    const page = await newPage();
    await signInAs(page, user);
    const caseId = caseIds[2] as string;
    await page.goto(`/console/cases/${caseId}`);
    await page.getByText("Request information").click();
    await page.getByRole("textbox", { name: /^To / }).fill("treasury@meridian.example");
    await page.getByRole("textbox", { name: "Subject", exact: true }).fill("Source of funds for wire 9902");
    await page
      .getByRole("textbox", { name: "Message", exact: true })
      .fill("Please send the contract behind this transfer.");
    await page.getByRole("button", { name: "Send the request" }).click();
    await page.waitForURL(/done=raised/);
    await page.getByText("Answer on the customer's behalf").click();
    await page.getByLabel("Field name").first().fill("source_of_funds");
    await page.getByLabel("Value").first().fill("Sale of property, contract attached");
    const pdf = Buffer.from(
      "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj 2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj 3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 300 144]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n",
    );
    await page
      .getByLabel("Documents")
      .setInputFiles({ name: "contract.pdf", mimeType: "application/pdf", buffer: pdf });
    await page.getByRole("button", { name: "Record the answer" }).click();
    await page.waitForURL(/done=answered/);
    const frame = page.locator("figure.doc iframe");
    expect(await frame.getAttribute("sandbox")).toBe("");
    const src = (await frame.getAttribute("src")) as string;
    const doc = await page.request.get(src);
    expect(doc.status()).toBe(200);
    expect(doc.headers()["content-type"]).toBe("application/pdf");
    expect(doc.headers()["x-content-type-options"]).toBe("nosniff");
    expect(Buffer.from(await doc.body()).equals(pdf)).toBe(true);
    const rfis = (await h.app.inject({ url: `/cases/${caseId}`, headers: partner.headers })).json()
      .informationRequests;
    expect(rfis[0].answer).toMatchObject({
      answeredBy: `analyst:${user.userId}`,
      documents: [{ filename: "contract.pdf", contentType: "application/pdf" }],
    });
    await page.locator("#rfi").scrollIntoViewIfNeeded();
    await shoot(page, "case");
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`/console/cases/${caseId}`);
    await shoot(page, "case-390px", false);
    await page.goto("/console/queue");
    await shoot(page, "queue-390px", false);
    await page.context().close();
  });

  it("creates an API key, shows it once, and the key works against the partner API", async () => {
    const admin = await createConsoleUser(h.app, tenantId, "admin", {
      name: "Olivia Admin",
      email: "olivia@northwind.example",
    });
    const page = await newPage();
    await signInAs(page, admin);
    await page.getByRole("link", { name: "Settings" }).click();
    await page.waitForURL(/\/settings\/api-keys/);
    await page.getByLabel("Name").fill("Onboarding service");
    await page.getByLabel("cases:read").check();
    await page.getByLabel("cases:write").check();
    await page.getByRole("button", { name: "Create key" }).click();
    const key = ((await page.locator("#new-key").textContent()) ?? "").trim();
    expect(key).toMatch(/^cds_test_/);
    await shoot(page, "settings-api-keys");
    const listed = await h.app.inject({ url: "/cases?limit=1", headers: { "x-api-key": key } });
    expect(listed.statusCode).toBe(200);
    await page.goto("/console/settings/api-keys");
    expect(await page.content()).not.toContain(key);
    await page.context().close();
  });

  it("changes the tag vocabulary", async () => {
    const admin = await createConsoleUser(h.app, tenantId, "admin", {
      name: "Omar Admin",
      email: "omar@northwind.example",
    });
    const page = await newPage();
    await signInAs(page, admin);
    await page.goto("/console/settings/tags");
    await page.getByLabel("Tag", { exact: false }).last().fill("chargeback");
    await page.getByRole("button", { name: "Add tag" }).click();
    await page.waitForURL(/done=tag-saved/);
    await page.getByRole("button", { name: "Disable tag pep" }).click();
    await page.waitForURL(/done=tag-saved/);
    const options = (
      await h.app.inject({ url: `/admin/tenants/${tenantId}/tag-options`, headers: adminHeaders })
    ).json().tagOptions as Array<{ tag: string; enabled: boolean }>;
    expect(options.find((o) => o.tag === "chargeback")?.enabled).toBe(true);
    expect(options.find((o) => o.tag === "pep")?.enabled).toBe(false);
    await shoot(page, "settings-tags");
    await page.goto("/console/settings/users");
    await shoot(page, "settings-users");
    await page.goto("/console/settings/webhooks");
    await shoot(page, "settings-webhooks");
    await page.goto("/console/audit");
    await shoot(page, "audit-log");
    await page.context().close();
  });

  it("opens a customer's entity page from a case page, with its cases and the related cases", async () => {
    const user = await createConsoleUser(h.app, tenantId, "analyst", {
      name: "Eve Investigator",
      email: "eve@northwind.example",
    });
    const page = await newPage();
    await signInAs(page, user);
    // Every payment of the set-up carries the sender cust-7: the first shares it with three others.
    await page.goto(`/console/cases/${caseIds[0]}`);
    const related = page.locator("#related li");
    await expect.poll(() => related.count()).toBe(3);
    await shoot(page, "case-entities");
    await page.locator("#entities").getByRole("link", { name: "cust-7" }).click();
    await page.waitForURL(/\/console\/entities\//);
    expect(await page.getByRole("heading", { name: /customer\s+cust-7/ }).isVisible()).toBe(true);
    expect(await page.getByText("4 cases").first().isVisible()).toBe(true);
    expect(await page.locator("#entity-cases tbody tr").count()).toBe(4);
    await shoot(page, "entity");
    await page.locator("#entity-cases").getByRole("link", { name: "Card payment 5512" }).click();
    await page.waitForURL(new RegExp(`/console/cases/${caseIds[4]}`));
    await page.context().close();
  });

  it("a viewer sees no override control, and the server refuses the post with 403", async () => {
    const viewer = await createConsoleUser(h.app, tenantId, "viewer", {
      name: "Vic Viewer",
      email: "vic@northwind.example",
    });
    const page = await newPage();
    await signInAs(page, viewer);
    const caseId = caseIds[0] as string;
    await page.goto(`/console/cases/${caseId}`);
    expect(await page.getByRole("button", { name: "Override the decision" }).count()).toBe(0);
    const csrf = (await page.locator('meta[name="csrf-token"]').getAttribute("content")) as string;
    const res = await page.request.post(`/console/cases/${caseId}/decision`, {
      form: { _csrf: csrf, value: "approved", reason: "I should not be able to" },
      maxRedirects: 0,
    });
    expect(res.status()).toBe(403);
    await page.context().close();
  });

  it("a user deleted while signed in is out on the next click", async () => {
    const user = await createConsoleUser(h.app, tenantId, "analyst", {
      name: "Dee Parted",
      email: "dee@northwind.example",
    });
    const page = await newPage();
    await signInAs(page, user);
    const res = await h.app.inject({
      method: "DELETE",
      url: `/admin/tenants/${tenantId}/users/${user.userId}`,
      headers: adminHeaders,
    });
    expect(res.statusCode).toBe(204);
    await page.getByRole("link", { name: "Audit log" }).click();
    await page.waitForURL(/\/console\/sign-in/);
    expect(await page.getByRole("heading", { name: "Sign in to the case console" }).isVisible()).toBe(true);
    await page.context().close();
  });

  it("refuses a form post without the CSRF token", async () => {
    const user = await createConsoleUser(h.app, tenantId, "analyst", {
      name: "Cy Surf",
      email: "cy@northwind.example",
    });
    const page = await newPage();
    await signInAs(page, user);
    const caseId = caseIds[3] as string;
    await page.goto(`/console/cases/${caseId}`);
    await page.evaluate(() => {
      document.querySelectorAll('input[name="_csrf"]').forEach((input) => {
        input.remove();
      });
    });
    await page.getByLabel("New decision").selectOption("declined");
    await page.getByLabel("Reason").fill("forged");
    await page.getByRole("button", { name: "Override the decision" }).click();
    await expect.poll(() => page.getByRole("heading", { name: "Not allowed" }).isVisible()).toBe(true);
    const record = (await h.app.inject({ url: `/cases/${caseId}`, headers: partner.headers })).json();
    expect(record.result.decision.value).toBe("in_review");
    await page.context().close();
  });
});
