import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WorkflowDefinition } from "../src/modules/workflows/workflow.types.js";
import { createTestApp, type TestApp } from "./support/app.js";
import { createConsoleUser, signedIn } from "./support/console.js";
import { createPartner, type Partner } from "./support/fixtures.js";
import { type ProviderRig, startProviderRig } from "./support/providers.js";
import { createWorkflow, waitForCase } from "./support/workflows.js";

/**
 * Screening review and provider actions in a real browser (Debian's Chromium through
 * playwright-core), against the vendor simulators as real HTTP servers: a false positive marked
 * and not raised again by a rescreen, and a paused node's action run from the case page. Each
 * flow also takes the screenshots in docs/console/ (UPDATE_SCREENSHOTS=1 writes them).
 */
const CHROMIUM = "/usr/bin/chromium";
const hasChromium = fs.existsSync(CHROMIUM);
if (!hasChromium) console.warn(`provider browser tests skipped: ${CHROMIUM} is missing`);

const SHOTS =
  process.env.UPDATE_SCREENSHOTS === "1"
    ? path.resolve(import.meta.dirname, "../docs/console")
    : fs.mkdtempSync(path.join(os.tmpdir(), "cds-provider-shots-"));

let h: TestApp;
let rig: ProviderRig;
let browser: Browser;
let base: string;
let partner: Partner;

/** Screens the subject, then verifies their identity with Sumsub when no hit is left in the results. */
const onboarding: WorkflowDefinition = {
  inputSchema: { type: "object" },
  start: "screen",
  nodes: [
    { id: "screen", type: "provider", provider: "opensanctions", config: { threshold: 0.7 }, next: "route" },
    {
      id: "route",
      type: "rules",
      rules: [{ when: "nodes.screen.matched", next: "review" }],
      default: "idv",
    },
    {
      id: "idv",
      type: "provider",
      provider: "sumsub",
      config: { levelName: "basic-kyc-level" },
      next: "done",
    },
    { id: "review", type: "decision", decision: "in_review" },
    { id: "done", type: "decision", decision: "approved" },
  ],
} as WorkflowDefinition;

async function submit(first: string, last: string, customer: string, birth: string): Promise<string> {
  const res = await h.app.inject({
    method: "POST",
    url: "/cases",
    headers: partner.headers,
    payload: {
      workflowId: "onboarding",
      type: "KYC",
      payload: {},
      subject: {
        displayName: `${first} ${last}`,
        person: {
          firstName: first,
          lastName: last,
          dateOfBirth: birth,
          nationality: "GB",
          identifiers: [{ type: "external_customer_id", value: customer }],
        },
      },
    },
  });
  if (res.statusCode !== 201) throw new Error(res.body);
  return res.json().caseId as string;
}

async function newPage(width = 1366, height = 900): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height }, baseURL: base });
  return context.newPage();
}

async function shoot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

async function signIn(page: Page, name: string): Promise<string> {
  const user = await createConsoleUser(h.app, partner.tenantId, "analyst", { name });
  await page.goto("/console/sign-in");
  await page.getByLabel("Email").fill(user.email);
  await page.getByLabel("Password").fill(user.password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(/\/console\/queue/);
  return user.userId;
}

describe.skipIf(!hasChromium)("screening review and provider actions in Chromium", () => {
  beforeAll(async () => {
    h = await createTestApp();
    base = await h.app.listen({ port: 0, host: "127.0.0.1" });
    await h.startWorker();
    rig = await startProviderRig(base);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
    });
    fs.mkdirSync(SHOTS, { recursive: true });
    partner = await createPartner(h.app);
    await rig.configure(h.app, partner.tenantId);
    await createWorkflow(h.app, partner.tenantId, "onboarding", onboarding);
  });

  afterAll(async () => {
    await browser?.close();
    await rig?.close();
    await h?.close();
  });

  it("marks a false-positive hit, and a rescreen against the simulator does not raise it again", async () => {
    const caseId = await submit("Boris", "Blacklistov", "cust-4410", "1988-07-21");
    const record = await waitForCase(h.app, partner.headers, caseId);
    expect(record.result.decision.value).toBe("in_review");
    const page = await newPage();
    await signIn(page, "Rita Screening");
    await page.goto(`/console/cases/${caseId}`);
    const hit = page.getByRole("article", { name: "Hit: Boris Blacklistov" });
    expect(await hit.getByRole("cell", { name: "1961-03-14 (differs)" }).isVisible()).toBe(true);
    expect(await hit.getByRole("cell", { name: "sim_sanctions" }).isVisible()).toBe(true);
    expect(await hit.getByText("not reviewed").isVisible()).toBe(true);
    await hit.getByText("Review this hit").click();
    await hit.getByLabel("No match: it is someone else").check();
    await hit.getByLabel("Reason").fill("Born 1988, the listed person in 1961; passport checked");
    await shoot(page, "screening-review");
    await hit.getByRole("button", { name: "Record the verdict" }).click();
    await page.waitForURL(/done=reviewed/);
    expect(await page.getByText("The verdict on the hit was recorded.").isVisible()).toBe(true);
    expect(await hit.getByText("no match", { exact: true }).first().isVisible()).toBe(true);

    const matches = rig.opensanctions.stats.requests.match ?? 0;
    await page.getByRole("button", { name: "Screen the case's subject again" }).click();
    await page.waitForSelector("#action-result");
    expect(rig.opensanctions.stats.requests.match).toBe(matches + 1);
    const result = page.locator("#action-result");
    expect(await result.textContent()).toContain("Screen the case's subject again: done");
    expect(await result.textContent()).toContain("No hit left to review");
    // The rescreen's hits are the ones shown now, with the verdict that still holds.
    expect(await page.locator("#screening").textContent()).toContain("rescreened by Rita Screening");
    expect(await page.locator("#provider-actions").textContent()).toMatch(
      /Screen the case's subject again \(opensanctions\) by Rita Screening\s*ok/,
    );
    // The trace tells the verdict and the rescreen's vendor call on the screening's step.
    const trace = (await page.locator("#trace").textContent()) ?? "";
    expect(trace).toMatch(/vendor call match by Rita Screening: HTTP 200, \d+ ms/);
    expect(trace).toContain('hit sim-person-0001 marked "no match" by Rita Screening');
    await shoot(page, "screening-rescreen");
    await page.context().close();
  });

  it("runs a paused node's action from the case page, checked by the simulator's request count", async () => {
    const caseId = await submit("Ada", "Lovelace", "cust-1815", "1990-12-10");
    await waitForCase(h.app, partner.headers, caseId, (c) => c.status === "waiting");
    const page = await newPage();
    const userId = await signIn(page, "Noor Onboarding");
    await page.goto(`/console/cases/${caseId}`);
    const identity = page.locator("#identity");
    expect(await identity.textContent()).toContain("Waiting for the applicant to complete the verification.");
    const links = rig.sumsub.stats.requests.websdk_link ?? 0;
    const resets = rig.sumsub.stats.requests.reset_applicant ?? 0;
    await page.getByRole("button", { name: "Issue a new WebSDK verification link" }).click();
    await page.waitForSelector("#action-result");
    expect(rig.sumsub.stats.requests.websdk_link).toBe(links + 1);
    expect(rig.sumsub.stats.requests.reset_applicant ?? 0).toBe(resets);
    const result = page.locator("#action-result");
    expect(await result.textContent()).toContain(`${rig.sumsubUrl}/websdk/p/`);
    await shoot(page, "provider-actions");
    const calls = await h.ctx.db.root
      .selectFrom("provider_calls")
      .select(["action", "actor", "outcome"])
      .where("case_id", "=", caseId)
      .where("actor", "=", `analyst:${userId}`)
      .execute();
    expect(calls).toEqual([{ action: "websdk_link", actor: `analyst:${userId}`, outcome: "ok" }]);

    // The vendor reviews the applicant: the case page tells the answer and its labels in words.
    const applicant = [...rig.sumsub.applicants.keys()].at(-1) as string;
    const review = await fetch(`${rig.sumsubUrl}/_simulator/applicants/${applicant}/review`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        reviewAnswer: "RED",
        reviewRejectType: "FINAL",
        rejectLabels: ["SELFIE_MISMATCH"],
      }),
    });
    expect(review.status).toBe(200);
    await waitForCase(h.app, partner.headers, caseId, (c) => c.status !== "waiting");
    await page.goto(`/console/cases/${caseId}`);
    const words = await identity.textContent();
    expect(words).toContain("Rejected for good");
    expect(words).toContain("the selfie does not match the document's photo (SELFIE_MISMATCH)");
    expect(
      await identity.getByRole("link", { name: "Open the applicant in Sumsub" }).getAttribute("href"),
    ).toContain(applicant);
    await shoot(page, "identity-result");
    await page.context().close();
  });

  it("orders the review queue by due date, the most overdue first", async () => {
    const { browser: admin } = await signedIn(h.app, partner.tenantId, "admin");
    await admin.get("/console/settings/review");
    const set = await admin.post("/console/settings/review", { KYC: "4", KYB: "", Transaction: "" });
    expect(set.statusCode).toBe(303);
    // Three cases waiting on Sumsub, created 1, 3 and 6 hours ago: due in 3 h, in 1 h, and 2 h ago.
    const ages: Record<string, number> = {};
    for (const [name, hours] of [
      ["Ivan Petrov", 1],
      ["Olga Petrova", 3],
      ["Boris Petrov", 6],
    ] as const) {
      const [first, last] = name.split(" ") as [string, string];
      const caseId = await submit(first, last, `cust-${hours}h`, "1970-01-01");
      await waitForCase(h.app, partner.headers, caseId, (c) => c.status === "waiting");
      await sql`UPDATE cases SET created_at = ${new Date(Date.now() - hours * 3_600_000)} WHERE id = ${caseId}`.execute(
        h.ctx.db.root,
      );
      ages[caseId] = hours;
    }
    const page = await newPage();
    await signIn(page, "Kim Queue");
    await page.getByRole("link", { name: /^Waiting/ }).click();
    await page.waitForURL(/status=waiting/);
    await page.getByLabel("Order").selectOption("due");
    await page.getByRole("button", { name: "Apply filters" }).click();
    await page.waitForURL(/sort=due/);
    const hrefs = await page
      .locator("a.case-link")
      .evaluateAll((links) =>
        links.map((a) => (a.getAttribute("href") ?? "").replace("/console/cases/", "")),
      );
    expect(hrefs.map((id) => ages[id])).toEqual([6, 3, 1]);
    expect(await page.locator("td.overdue").count()).toBe(1);
    await shoot(page, "queue-by-due");
    await page.context().close();
  });
});
