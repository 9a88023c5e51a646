import fs from "node:fs";
import net from "node:net";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lineDiff, nodeInWords } from "../src/modules/backtests/backtests.console.js";
import type { WorkflowDefinition } from "../src/modules/workflows/workflow.types.js";
import { createTestApp, type TestApp } from "./support/app.js";
import { ConsoleClient, createConsoleUser, signedIn } from "./support/console.js";
import { createPartner, type Partner } from "./support/fixtures.js";
import { amountScreen, createWorkflow, kycSubject, waitForCase } from "./support/workflows.js";

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
  await h.startWorker();
});
afterAll(async () => {
  await h.close();
});

const settled = (c: { status: string }) => ["decided", "in_review", "failed"].includes(c.status);

function screenAt(threshold: number): WorkflowDefinition {
  const wf = structuredClone(amountScreen);
  (wf.nodes[0] as Record<string, unknown>).rules = [
    { when: `payload.amount > ${threshold}`, next: "review" },
  ];
  return wf;
}

async function submit(partner: Partner, amount: number): Promise<string> {
  const res = await h.app.inject({
    method: "POST",
    url: "/cases",
    headers: partner.headers,
    payload: { workflowId: "pay", type: "KYC", payload: { amount }, subject: kycSubject },
  });
  expect(res.statusCode, res.body).toBe(201);
  const caseId = res.json().caseId as string;
  await waitForCase(h.app, partner.headers, caseId, settled, 120_000);
  return caseId;
}

/** A tenant with pay v1 (threshold 1000, published), three cases, and v2 (threshold 500) unpublished. */
async function tenantWithCandidate(): Promise<{ partner: Partner; cases: Record<number, string> }> {
  const partner = await createPartner(h.app);
  await createWorkflow(h.app, partner.tenantId, "pay", screenAt(1000));
  const cases: Record<number, string> = {};
  for (const amount of [200, 600, 1500]) cases[amount] = await submit(partner, amount);
  await createWorkflow(h.app, partner.tenantId, "pay", screenAt(500), { publish: false });
  return { partner, cases };
}

describe("the console's workflow pages", () => {
  it("are read by analysts, acted on by admins only, and closed to viewers", async () => {
    const { partner } = await tenantWithCandidate();
    const viewer = await signedIn(h.app, partner.tenantId, "viewer");
    const analyst = await signedIn(h.app, partner.tenantId, "analyst");
    const admin = await signedIn(h.app, partner.tenantId, "admin");
    for (const url of ["/console/workflows", "/console/workflows/pay?version=2&compare=1"]) {
      expect((await new ConsoleClient(h.app).get(url)).statusCode, url).toBe(303);
      expect((await viewer.browser.get(url)).statusCode, url).toBe(403);
      const read = await analyst.browser.get(url);
      expect(read.statusCode, url).toBe(200);
      expect(read.body).not.toContain("Start backtest");
    }
    const page = await analyst.browser.get("/console/workflows/pay?version=2");
    expect(page.body).toContain("if payload.amount > 500 → review");
    for (const [url, fields] of [
      ["/console/workflows/pay/publish", { version: "2" }],
      [
        "/console/workflows/pay/backtests",
        { version: "2", from: "2026-01-01T00:00:00Z", to: "2026-02-01T00:00:00Z" },
      ],
      ["/console/workflows/pay/dry-run", { version: "2", submission: "{}" }],
    ] as const) {
      expect((await analyst.browser.post(url, fields)).statusCode, url).toBe(403);
    }
    const current = await h.app.inject({
      url: `/admin/tenants/${partner.tenantId}/workflows`,
      headers: { authorization: "Bearer test-operator-token-0123456789" },
    });
    expect(JSON.stringify(current.json())).toContain('"currentVersion":1');
    const adminPage = await admin.browser.get("/console/workflows/pay");
    expect(adminPage.statusCode).toBe(200);
    expect(adminPage.body).toContain("Start backtest");
    expect((await admin.browser.get("/console/workflows/nope")).statusCode).toBe(404);
    expect((await admin.browser.get("/console/workflows/pay?version=9")).statusCode).toBe(404);
    expect(
      (await admin.browser.get("/console/backtests/00000000-0000-4000-8000-000000000000")).statusCode,
    ).toBe(404);
    const bad = await admin.browser.post("/console/workflows/pay/backtests", {
      version: "2",
      from: "2026-02-01T00:00:00Z",
      to: "2026-01-01T00:00:00Z",
    });
    expect(bad.statusCode).toBe(400);
  });

  it("dry runs a case on a version for an admin, and opens it", async () => {
    const { partner } = await tenantWithCandidate();
    const admin = await signedIn(h.app, partner.tenantId, "admin");
    await admin.browser.get("/console/workflows/pay?version=2");
    const submission = JSON.stringify({ type: "KYC", payload: { amount: 700 }, subject: kycSubject });
    const ran = await admin.browser.post("/console/workflows/pay/dry-run", { version: "2", submission });
    expect(ran.statusCode, ran.body).toBe(303);
    const caseId = /\/console\/cases\/([0-9a-f-]{36})$/.exec(String(ran.headers.location))?.[1] as string;
    const kase = await h.ctx.db.root
      .selectFrom("cases")
      .select(["dry_run", "workflow_version", "decision"])
      .where("id", "=", caseId)
      .executeTakeFirstOrThrow();
    expect(kase).toMatchObject({ dry_run: true, workflow_version: 2, decision: { value: "in_review" } });
    expect((await admin.browser.get(`/console/cases/${caseId}`)).statusCode).toBe(200);
    for (const bad of [
      "not json",
      "[]",
      JSON.stringify({ type: "Loan", payload: {}, subject: kycSubject }),
    ]) {
      const refused = await admin.browser.post("/console/workflows/pay/dry-run", {
        version: "2",
        submission: bad,
      });
      expect(refused.statusCode, bad).toBe(400);
    }
  });

  it("puts a definition in words and two versions' difference line by line", () => {
    expect(
      nodeInWords({
        id: "screen",
        type: "rules",
        rules: [{ when: "payload.amount > 5", next: "r" }],
        default: "a",
      }),
    ).toEqual(["if payload.amount > 5 → r", "otherwise → a"]);
    expect(lineDiff(["a", "b", "c"], ["a", "x", "c"])).toEqual([
      { kind: " ", line: "a" },
      { kind: "-", line: "b" },
      { kind: "+", line: "x" },
      { kind: " ", line: "c" },
    ]);
  });
});

const CHROMIUM = "/usr/bin/chromium";
const hasChromium = fs.existsSync(CHROMIUM);
if (!hasChromium)
  console.warn(`console browser tests skipped: ${CHROMIUM} is missing (apt-get install -y chromium)`);

describe.skipIf(!hasChromium)("a workflow's page in Chromium", () => {
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

  it("compares versions, backtests one, shows the matrix, opens a changed case, publishes", {
    timeout: 180_000,
  }, async () => {
    const { partner, cases } = await tenantWithCandidate();
    const user = await createConsoleUser(h.app, partner.tenantId, "admin");
    const context = await browser.newContext({ baseURL: base });
    const page = await context.newPage();
    await page.goto("/console/sign-in");
    await page.getByLabel("Email").fill(user.email);
    await page.getByLabel("Password").fill(user.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(/\/console\/queue/);

    await page.getByRole("link", { name: "Workflows" }).first().click();
    await page.waitForURL(/\/console\/workflows$/);
    await page.getByRole("link", { name: "pay" }).click();
    await page.getByRole("link", { name: "2", exact: true }).click();
    await page.waitForURL(/version=2/);
    expect(await page.locator("#definition").innerText()).toContain("if payload.amount > 500 → review");
    await page.getByRole("link", { name: "Compare version 2 with version 1" }).click();
    const diff = await page.locator("[data-diff]").innerText();
    expect(diff).toMatch(/^- +"when": "payload.amount > 1000",$/m);
    expect(diff).toMatch(/^\+ +"when": "payload.amount > 500",$/m);

    await page.getByRole("button", { name: "Start backtest" }).click();
    await page.waitForURL(/\/console\/backtests\//);
    for (let i = 0; (await page.locator("[data-status]").innerText()) === "running"; i++) {
      if (i > 600) throw new Error("the backtest did not end");
      await page.waitForTimeout(200);
      await page.reload();
    }
    expect(await page.locator("[data-status]").innerText()).toBe("completed");
    // Table headings are shown in capitals.
    const matrix = (await page.locator("#matrix table").first().innerText())
      .replace(/\s+/g, " ")
      .toLowerCase();
    expect(matrix).toContain("before \\ after approved in_review approved 1 1 in_review 0 1");
    expect(await page.locator("#matrix").innerText()).toContain("Changed 1, unchanged 2");
    const backtestUrl = page.url();

    await page.getByRole("link", { name: (cases[600] as string).slice(0, 8) }).click();
    await page.waitForURL(new RegExp(`/console/cases/${cases[600]}`));
    expect(await page.locator("main").innerText()).toContain(cases[600] as string);

    await page.goto(backtestUrl);
    await page.getByRole("link", { name: "pay" }).click();
    await page.getByRole("button", { name: "Publish version 2" }).click();
    await page.getByText("The version was published: new cases use it.").waitFor();
    const audit = await h.ctx.db.root
      .selectFrom("console_audit")
      .select(["action", "actor", "after"])
      .where("tenant_id", "=", partner.tenantId)
      .where("action", "in", ["workflow.publish", "backtest.start"])
      .orderBy("id")
      .execute();
    expect(audit.map((a) => a.action)).toEqual(["workflow.publish", "backtest.start", "workflow.publish"]);
    expect(audit[2]).toMatchObject({ actor: `analyst:${user.userId}`, after: { version: 2 } });
    expect(audit[0]).toMatchObject({ actor: "operator", after: { version: 1 } });
    await context.close();
  });
});
