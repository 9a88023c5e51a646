import fs from "node:fs";
import net from "node:net";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "./support/app.js";
import { ConsoleClient, createConsoleUser, signedIn } from "./support/console.js";
import { adminHeaders, createTenant } from "./support/fixtures.js";

let h: TestApp;
let base: string;

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

beforeAll(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  h = await createTestApp({ publicUrl: base });
  await h.app.listen({ port, host: "127.0.0.1" });
});
afterAll(async () => {
  await h.close();
});

async function listValues(tenantId: string, listId: string): Promise<string[]> {
  const res = await h.app.inject({
    url: `/admin/tenants/${tenantId}/lists/${listId}/values?limit=1000`,
    headers: adminHeaders,
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().values;
}

describe("Settings › Lists", () => {
  it("is for admins: a browser without a session signs in, viewers and analysts get 403", async () => {
    const tenantId = await createTenant(h.app);
    const viewer = await signedIn(h.app, tenantId, "viewer");
    const analyst = await signedIn(h.app, tenantId, "analyst");
    const admin = await signedIn(h.app, tenantId, "admin");
    for (const url of ["/console/settings/lists", "/console/settings/lists/any_list"]) {
      expect((await new ConsoleClient(h.app).get(url)).statusCode, url).toBe(303);
      expect((await viewer.browser.get(url)).statusCode, url).toBe(403);
      expect((await analyst.browser.get(url)).statusCode, url).toBe(403);
    }
    await analyst.browser.get("/console/queue");
    expect(
      (await analyst.browser.post("/console/settings/lists", { listId: "sneaky", normalize: "none" }))
        .statusCode,
    ).toBe(403);
    expect(
      (await analyst.browser.postJson("/console/settings/lists/sneaky/upload", { add: ["x"] })).statusCode,
    ).toBe(403);
    const page = await admin.browser.get("/console/settings/lists");
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('href="/console/settings/lists"');
    expect((await analyst.browser.get("/console/queue")).body).not.toContain("/console/settings/lists");
    const lists = await h.app.inject({ url: `/admin/tenants/${tenantId}/lists`, headers: adminHeaders });
    expect(lists.json().lists).toEqual([]);
  });

  it("creates a list, adds, searches, removes, uploads and deletes, each change in the audit log", async () => {
    const tenantId = await createTenant(h.app);
    const { browser, user } = await signedIn(h.app, tenantId, "admin");
    await browser.get("/console/settings/lists");
    const created = await browser.post("/console/settings/lists", {
      listId: "blocked_ibans",
      description: "IBANs we refuse",
      normalize: "iban",
    });
    expect(created.statusCode).toBe(303);
    expect(created.headers.location).toBe("/console/settings/lists/blocked_ibans?done=list-saved");
    const page = await browser.get("/console/settings/lists/blocked_ibans?done=list-saved");
    expect(page.body).toContain("The list was saved.");
    expect(page.body).toContain("The list is empty.");
    const added = await browser.post("/console/settings/lists/blocked_ibans/values", {
      add: "de89 3704 0044 0532 0130 00\r\nGB82WEST12345698765432\n\nNL91ABNA0417164300",
      remove: "",
    });
    expect(added.statusCode).toBe(303);
    expect(await listValues(tenantId, "blocked_ibans")).toEqual([
      "DE89370400440532013000",
      "GB82WEST12345698765432",
      "NL91ABNA0417164300",
    ]);
    const search = await browser.get("/console/settings/lists/blocked_ibans?prefix=gb82");
    expect(search.body).toContain("GB82WEST12345698765432");
    expect(search.body).not.toContain("NL91ABNA0417164300");
    expect(
      (await browser.post("/console/settings/lists/blocked_ibans/values", { remove: "NL91ABNA0417164300" }))
        .statusCode,
    ).toBe(303);
    const upload = await browser.postJson("/console/settings/lists/blocked_ibans/upload", {
      add: ["FR7630006000011234567890189", "fr76 3000 6000 0112 3456 7890 189"],
    });
    expect(upload.statusCode, upload.body).toBe(200);
    expect(upload.json()).toEqual({ valueCount: 3 });
    const tooMany = await browser.postJson("/console/settings/lists/blocked_ibans/upload", {
      add: Array.from({ length: 10_001 }, (_, i) => `X${i}`),
    });
    expect(tooMany.statusCode).toBe(400);
    expect(tooMany.json()).toMatchObject({
      code: "invalid_request",
      error: expect.stringContaining("10000"),
    });
    await browser.get("/console/settings/lists/blocked_ibans");
    expect((await browser.post("/console/settings/lists/blocked_ibans/delete")).statusCode).toBe(303);
    expect((await browser.get("/console/settings/lists?done=list-deleted")).body).toContain("No lists yet.");
    const rows = await h.ctx.db.root
      .selectFrom("console_audit")
      .select(["actor", "action", "target"])
      .where("tenant_id", "=", tenantId)
      .where("target", "like", "list:%")
      .orderBy("id")
      .execute();
    const actor = `analyst:${user.userId}`;
    expect(rows).toEqual(
      ["list.create", "list.values", "list.values", "list.values", "list.delete"].map((action) => ({
        actor,
        action,
        target: "list:blocked_ibans",
      })),
    );
    const audit = await browser.get("/console/audit");
    expect(audit.body).toContain("Created a list");
    expect(audit.body).toMatch(/Changed a list(&#39;|')s values/);
    expect(audit.body).toContain("Deleted a list");
  });

  it("shows another tenant's list as not found, and refuses a bad list id", async () => {
    const owner = await createTenant(h.app);
    const other = await createTenant(h.app);
    await h.app.inject({
      method: "PUT",
      url: `/admin/tenants/${owner}/lists/private_list`,
      headers: adminHeaders,
      payload: {},
    });
    const { browser } = await signedIn(h.app, other, "admin");
    expect((await browser.get("/console/settings/lists/private_list")).statusCode).toBe(404);
    await browser.get("/console/settings/lists");
    expect(
      (await browser.postJson("/console/settings/lists/private_list/upload", { add: ["x"] })).statusCode,
    ).toBe(404);
    expect((await browser.post("/console/settings/lists/private_list/delete")).statusCode).toBe(404);
    const bad = await browser.post("/console/settings/lists", { listId: "Bad Id", normalize: "none" });
    expect(bad.statusCode).toBe(400);
    expect(await listValues(owner, "private_list")).toEqual([]);
  });
});

const CHROMIUM = "/usr/bin/chromium";
const hasChromium = fs.existsSync(CHROMIUM);
if (!hasChromium)
  console.warn(`console browser tests skipped: ${CHROMIUM} is missing (apt-get install -y chromium)`);

describe.skipIf(!hasChromium)("Settings › Lists in Chromium", () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
    });
  });
  afterAll(async () => {
    await browser?.close();
  });

  it("uploads a file of 25,000 values, one a line, in three parts", { timeout: 90_000 }, async () => {
    const tenantId = await createTenant(h.app);
    const user = await createConsoleUser(h.app, tenantId, "admin");
    const context = await browser.newContext({ baseURL: base });
    const page = await context.newPage();
    await page.goto("/console/sign-in");
    await page.getByLabel("Email").fill(user.email);
    await page.getByLabel("Password").fill(user.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(/\/console\/queue/);
    await page.goto("/console/settings/lists");
    await page.getByLabel("List id").fill("mule_devices");
    await page.getByLabel("Normalise values as").selectOption("device_id");
    await page.getByRole("button", { name: "Create list" }).click();
    await page.waitForURL(/\/console\/settings\/lists\/mule_devices\?done=list-saved/);
    const lines = Array.from({ length: 25_000 }, (_, i) => ` device-${String(i).padStart(5, "0")} `);
    await page.locator('input[type="file"]').setInputFiles({
      name: "devices.txt",
      mimeType: "text/plain",
      buffer: Buffer.from(`${lines.join("\r\n")}\n\n`),
    });
    await page.getByRole("button", { name: "Upload" }).click();
    await page.waitForURL(/\/console\/settings\/lists\/mule_devices\?done=uploaded/, { timeout: 60_000 });
    await page.getByText("The file's values were applied.").waitFor();
    expect(await page.locator("main").innerText()).toContain("25000 values");
    const values = await listValues(tenantId, "mule_devices");
    expect(values.slice(0, 2)).toEqual(["device-00000", "device-00001"]);
    const audit = await h.ctx.db.root
      .selectFrom("console_audit")
      .select(["action", "after"])
      .where("tenant_id", "=", tenantId)
      .where("action", "=", "list.values")
      .orderBy("id")
      .execute();
    expect(audit.map((r) => (r.after as { added: number }).added)).toEqual([10_000, 10_000, 5_000]);
    await context.close();
  });
});
