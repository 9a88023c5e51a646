import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WorkflowDefinition } from "../src/modules/workflows/workflow.types.js";
import { createTestApp, type TestApp } from "./support/app.js";
import { runCds } from "./support/cli.js";
import { type ConsoleClient, signedIn } from "./support/console.js";
import { adminHeaders, createPartner, type Partner } from "./support/fixtures.js";
import { OPENSANCTIONS_API_KEY, type ProviderRig, startProviderRig } from "./support/providers.js";
import { createWorkflow, waitForCase } from "./support/workflows.js";

/**
 * Screening review and provider actions from the console, over HTTP on the real app and
 * database (PGlite, or PostgreSQL with DATABASE_URL), against the vendor simulators as real
 * HTTP servers: each hit beside the subject, verdicts remembered per entity (`dismissedHits`,
 * `unreviewedHits`), their audit rows and their place in the case's trace, identity results in
 * words, and a paused node's action run from the case page, its vendor calls in the trace.
 */

let h: TestApp;
let rig: ProviderRig;
let url: string;

beforeAll(async () => {
  h = await createTestApp();
  url = await h.app.listen({ port: 0, host: "127.0.0.1" });
  await h.startWorker();
  rig = await startProviderRig(url);
});

afterAll(async () => {
  await rig.close();
  await h.close();
});

/** Screens the subject; a hit at or above the threshold not dismissed for the customer sends the case to review. */
const screening: WorkflowDefinition = {
  inputSchema: { type: "object" },
  start: "screen",
  nodes: [
    { id: "screen", type: "provider", provider: "opensanctions", config: { threshold: 0.7 }, next: "route" },
    {
      id: "route",
      type: "rules",
      rules: [{ when: "nodes.screen.matched", next: "review" }],
      default: "approve",
    },
    { id: "approve", type: "decision", decision: "approved" },
    { id: "review", type: "decision", decision: "in_review" },
  ],
} as WorkflowDefinition;

interface Team {
  partner: Partner;
  analyst: ConsoleClient;
  analystId: string;
}

async function team(): Promise<Team> {
  const partner = await createPartner(h.app);
  await rig.configure(h.app, partner.tenantId);
  await createWorkflow(h.app, partner.tenantId, "screen", screening);
  const { browser, user } = await signedIn(h.app, partner.tenantId, "analyst");
  return { partner, analyst: browser, analystId: user.userId };
}

/** A case of Boris Blacklistov (the simulator's sanctioned person) under a customer id. */
async function boris(t: Team, customer: string) {
  const res = await h.app.inject({
    method: "POST",
    url: "/cases",
    headers: t.partner.headers,
    payload: {
      workflowId: "screen",
      type: "KYC",
      payload: {},
      subject: {
        displayName: "Boris Blacklistov",
        person: {
          firstName: "Boris",
          lastName: "Blacklistov",
          dateOfBirth: "1970-01-01",
          nationality: "GB",
          identifiers: [{ type: "external_customer_id", value: customer }],
        },
      },
    },
  });
  expect(res.statusCode, res.body).toBe(201);
  const caseId = res.json().caseId as string;
  return { caseId, record: await waitForCase(h.app, t.partner.headers, caseId) };
}

async function screenOutput(caseId: string) {
  const run = await h.ctx.db.root
    .selectFrom("provider_runs")
    .select("output")
    .where("case_id", "=", caseId)
    .executeTakeFirstOrThrow();
  return run.output as unknown as ScreeningOutput;
}

interface ScreeningOutput {
  matched: boolean;
  top_score: number;
  results: Array<{ id: string }>;
  dismissedHits: Array<{ id: string }>;
  unreviewedHits: number;
}

/** The provider step of the case's trace, as `GET /admin/cases/{caseId}` shows it. */
async function screenStep(caseId: string) {
  const res = await h.app.inject({ method: "GET", url: `/admin/cases/${caseId}`, headers: adminHeaders });
  expect(res.statusCode, res.body).toBe(200);
  const trace = res.json().trace as Array<Record<string, unknown>>;
  const step = trace.find((s) => s.nodeType === "provider");
  expect(step).toBeDefined();
  return step as Record<string, unknown>;
}

const HIT = "sim-person-0001";

async function markNoMatch(t: Team, caseId: string, reason = "Born 1970 in London, not the listed person") {
  await t.analyst.get(`/console/cases/${caseId}`);
  return t.analyst.post(`/console/cases/${caseId}/screening`, {
    brokerId: "opensanctions",
    hitId: HIT,
    verdict: "no_match",
    reason,
  });
}

describe("screening review", () => {
  it("shows each hit beside the subject in words: name, birth date, nationality, datasets, score", async () => {
    const t = await team();
    const { caseId, record } = await boris(t, "cust-b1");
    expect(record.result.decision.value).toBe("in_review");
    const page = await t.analyst.get(`/console/cases/${caseId}`);
    expect(page.statusCode).toBe(200);
    const panel = page.body.slice(page.body.indexOf('id="screening"'));
    expect(panel).toContain("Boris Blacklistov");
    expect(panel).toContain("1961-03-14"); // the listed person's birth date
    expect(panel).toContain("1970-01-01"); // beside the subject's
    expect(panel).toContain("(differs)");
    expect(panel).toContain("RU");
    expect(panel).toContain("sim_sanctions");
    expect(panel).toMatch(/score 0\.\d+, at or above the threshold/);
    expect(panel).toContain("not reviewed");
    // The trace says it in words too.
    expect(page.body).toMatch(/1 hit at or above the threshold: Boris Blacklistov/);
  });

  it("remembers a “no_match” for the customer: a rescreen and a later case of theirs report it under dismissedHits", async () => {
    const t = await team();
    const first = await boris(t, "cust-b2");
    expect(await screenOutput(first.caseId)).toMatchObject({
      matched: true,
      results: [{ id: HIT }],
      dismissedHits: [],
      unreviewedHits: 1,
    });

    const marked = await markNoMatch(t, first.caseId);
    expect(marked.statusCode, marked.body).toBe(303);
    expect(marked.headers.location).toMatch(new RegExp(`/console/cases/${first.caseId}\\?done=reviewed#`));
    const page = await t.analyst.get(marked.headers.location as string);
    expect(page.body).toContain("The verdict on the hit was recorded.");
    expect(page.body).toContain("Born 1970 in London, not the listed person");

    // The audit row, by the analyst, with the verdict.
    const audit = await h.ctx.db.root
      .selectFrom("console_audit")
      .selectAll()
      .where("tenant_id", "=", t.partner.tenantId)
      .where("action", "=", "screening.review")
      .execute();
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      actor: `analyst:${t.analystId}`,
      target: `case:${first.caseId}`,
      after: { brokerId: "opensanctions", hitId: HIT, verdict: "no_match", name: "Boris Blacklistov" },
    });

    const stored = await h.ctx.db.root
      .selectFrom("screening_reviews")
      .select("verdict")
      .where("case_id", "=", first.caseId)
      .execute();
    expect(stored).toEqual([{ verdict: "no_match" }]);

    // A rescreen by the partner: the vendor still lists the hit, but it is reported as dismissed.
    const before = rig.opensanctions.stats.requests.match ?? 0;
    const rescreen = await h.app.inject({
      method: "POST",
      url: `/cases/${first.caseId}/actions/opensanctions/rescreen`,
      headers: t.partner.headers,
    });
    expect(rescreen.statusCode, rescreen.body).toBe(200);
    expect(rig.opensanctions.stats.requests.match).toBe(before + 1);
    expect(rescreen.json().output).toMatchObject({
      matched: false,
      top_score: 0,
      results: [],
      dismissedHits: [{ id: HIT, caption: "Boris Blacklistov" }],
      unreviewedHits: 0,
    });

    // The case's trace carries the verdict and the rescreen's vendor call on the screening's step,
    // and the case page says them in words.
    const step = await screenStep(first.caseId);
    expect(step.verdicts).toEqual([
      {
        hitId: HIT,
        verdict: "no_match",
        reason: "Born 1970 in London, not the listed person",
        actor: `analyst:${t.analystId}`,
        at: expect.any(String),
      },
    ]);
    expect(step.actionCalls).toEqual([
      {
        action: "match",
        actor: `apikey:${t.partner.keyId}`,
        attempt: 1,
        httpStatus: 200,
        durationMs: expect.any(Number),
        outcome: "ok",
        at: expect.any(String),
      },
    ]);
    expect(JSON.stringify(step)).not.toContain(OPENSANCTIONS_API_KEY);
    const traced = (await t.analyst.get(`/console/cases/${first.caseId}`)).body;
    expect(traced).toMatch(/vendor call match by API key .*: HTTP 200, \d+ ms/);
    expect(traced).toMatch(
      /hit sim-person-0001 marked (&quot;|")no match(&quot;|") by [^:<]+: Born 1970 in London, not the listed person/,
    );

    // `cds case show` says them too.
    const shown = await runCds(url, "case", "show", "--case", first.caseId);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(
      new RegExp(`vendor call match by apikey:${t.partner.keyId}: HTTP 200, \\d+ ms`),
    );
    expect(shown.stdout).toContain(
      `hit ${HIT} marked "no match" by analyst:${t.analystId}: Born 1970 in London, not the listed person`,
    );

    // A later case of the same customer goes through; another customer of the same name does not.
    const later = await boris(t, "cust-b2");
    expect(later.record.result.decision.value).toBe("approved");
    expect(await screenOutput(later.caseId)).toMatchObject({
      matched: false,
      top_score: 0,
      results: [],
      dismissedHits: [{ id: HIT }],
      unreviewedHits: 0,
    });
    const laterPage = await t.analyst.get(`/console/cases/${later.caseId}`);
    expect(laterPage.body).toContain("another case");
    expect(laterPage.body).toMatch(
      /Boris Blacklistov \([0-9.]+\) marked (&quot;|")no match(&quot;|") for this subject earlier: dismissed, not raised again/,
    );
    const stranger = await boris(t, "cust-b3");
    expect(stranger.record.result.decision.value).toBe("in_review");
    expect(await screenOutput(stranger.caseId)).toMatchObject({ results: [{ id: HIT }], unreviewedHits: 1 });

    // The newest verdict holds: marked a match again, the hit is raised again.
    await t.analyst.get(`/console/cases/${later.caseId}`);
    const match = await t.analyst.post(`/console/cases/${later.caseId}/screening`, {
      brokerId: "opensanctions",
      hitId: HIT,
      verdict: "match",
      reason: "New evidence: same person",
    });
    expect(match.statusCode).toBe(303);
    const again = await boris(t, "cust-b2");
    expect(again.record.result.decision.value).toBe("in_review");
    // A hit marked at all is no longer unreviewed: a match is a result, counted nowhere else.
    expect(await screenOutput(again.caseId)).toMatchObject({
      matched: true,
      results: [{ id: HIT }],
      dismissedHits: [],
      unreviewedHits: 0,
    });
  });

  it("answers 400 beside the field for a missing verdict or reason, and 404 for a hit the case never had", async () => {
    const t = await team();
    const { caseId } = await boris(t, "cust-b4");
    await t.analyst.get(`/console/cases/${caseId}`);
    const noVerdict = await t.analyst.post(`/console/cases/${caseId}/screening`, {
      brokerId: "opensanctions",
      hitId: HIT,
      reason: "because",
    });
    expect(noVerdict.statusCode).toBe(400);
    expect(noVerdict.body).toContain("Choose “match” or “no match”.");
    expect(noVerdict.body).toContain("because"); // what was typed stays
    const badVerdict = await t.analyst.post(`/console/cases/${caseId}/screening`, {
      brokerId: "opensanctions",
      hitId: HIT,
      verdict: "maybe",
      reason: "x",
    });
    expect(badVerdict.statusCode).toBe(400);
    // The former name of "no_match" is not a verdict.
    const formerName = await t.analyst.post(`/console/cases/${caseId}/screening`, {
      brokerId: "opensanctions",
      hitId: HIT,
      verdict: "not_a_match",
      reason: "someone else",
    });
    expect(formerName.statusCode).toBe(400);
    expect(formerName.body).toContain("Choose “match” or “no match”.");
    const noReason = await t.analyst.post(`/console/cases/${caseId}/screening`, {
      brokerId: "opensanctions",
      hitId: HIT,
      verdict: "no_match",
      reason: "  ",
    });
    expect(noReason.statusCode).toBe(400);
    expect(noReason.body).toContain("A reason of 1 to 2000 characters is required.");
    for (const [brokerId, hitId] of [
      ["opensanctions", "sim-person-9999"],
      ["sumsub", HIT],
      ["nobody", HIT],
    ]) {
      const res = await t.analyst.post(`/console/cases/${caseId}/screening`, {
        brokerId: brokerId as string,
        hitId: hitId as string,
        verdict: "match",
        reason: "x",
      });
      expect(res.statusCode, `${brokerId}/${hitId}`).toBe(404);
    }
    const rows = await h.ctx.db.root
      .selectFrom("screening_reviews")
      .select("id")
      .where("tenant_id", "=", t.partner.tenantId)
      .execute();
    expect(rows).toEqual([]);
  });

  it("keeps tenants apart: another tenant's case is 404, and one tenant's verdict is not another's", async () => {
    const a = await team();
    const b = await team();
    const caseOfA = await boris(a, "cust-shared");
    expect((await markNoMatch(b, caseOfA.caseId)).statusCode).toBe(404);
    expect((await b.analyst.get(`/console/cases/${caseOfA.caseId}`)).statusCode).toBe(404);
    expect((await markNoMatch(a, caseOfA.caseId)).statusCode).toBe(303);
    // The same customer id at another tenant is another entity: the hit is raised there.
    const caseOfB = await boris(b, "cust-shared");
    expect(caseOfB.record.result.decision.value).toBe("in_review");
    const caseOfA2 = await boris(a, "cust-shared");
    expect(caseOfA2.record.result.decision.value).toBe("approved");
  });

  it("a viewer sees the hits but gets no form, and a post of theirs is 403", async () => {
    const t = await team();
    const { caseId } = await boris(t, "cust-b5");
    const { browser } = await signedIn(h.app, t.partner.tenantId, "viewer");
    const page = await browser.get(`/console/cases/${caseId}`);
    expect(page.body).toContain('id="screening"');
    expect(page.body).not.toContain(`action="/console/cases/${caseId}/screening"`);
    const res = await browser.post(`/console/cases/${caseId}/screening`, {
      brokerId: "opensanctions",
      hitId: HIT,
      verdict: "match",
      reason: "x",
    });
    expect(res.statusCode).toBe(403);
  });
});

/** A KYC case paused on Sumsub. */
const kyc: WorkflowDefinition = {
  inputSchema: { type: "object" },
  start: "idv",
  nodes: [
    {
      id: "idv",
      type: "provider",
      provider: "sumsub",
      config: { levelName: "basic-kyc-level" },
      next: "done",
    },
    { id: "done", type: "decision", decision: "in_review" },
  ],
} as WorkflowDefinition;

describe("provider actions from the case page", () => {
  it("runs a paused node's action, shows what it gave, and records the vendor call and the audit row", async () => {
    const t = await team();
    await createWorkflow(h.app, t.partner.tenantId, "kyc", kyc);
    const res = await h.app.inject({
      method: "POST",
      url: "/cases",
      headers: t.partner.headers,
      payload: {
        workflowId: "kyc",
        type: "KYC",
        payload: {},
        subject: {
          displayName: "Ada Lovelace",
          person: {
            firstName: "Ada",
            lastName: "Lovelace",
            identifiers: [{ type: "external_customer_id", value: "cust-ada" }],
          },
        },
      },
    });
    const caseId = res.json().caseId as string;
    await waitForCase(h.app, t.partner.headers, caseId, (c) => c.status === "waiting");

    const page = await t.analyst.get(`/console/cases/${caseId}`);
    expect(page.body).toContain('id="provider-actions"');
    expect(page.body).toContain("Issue a new WebSDK verification link");
    expect(page.body).toContain("Waiting for the applicant to complete the verification.");
    const handle = /name="handle" value="([0-9a-f-]{36})"/.exec(page.body)?.[1] as string;
    expect(handle).toBeDefined();

    const links = rig.sumsub.stats.requests.websdk_link ?? 0;
    const run = await t.analyst.post(`/console/cases/${caseId}/provider-actions`, {
      kind: "pending",
      brokerId: "sumsub",
      actionId: "regenerate_link",
      handle,
    });
    expect(run.statusCode, run.body).toBe(200);
    expect(rig.sumsub.stats.requests.websdk_link).toBe(links + 1);
    expect(run.body).toContain("Issue a new WebSDK verification link: done");
    expect(run.body).toMatch(new RegExp(`${rig.sumsubUrl}/websdk/p/`));
    expect(run.body).toContain("Shown once");

    const calls = await h.ctx.db.root
      .selectFrom("provider_calls")
      .selectAll()
      .where("case_id", "=", caseId)
      .where("action", "=", "websdk_link")
      .orderBy("id")
      .execute();
    expect(calls.map((c) => c.actor)).toEqual([`node:idv`, `analyst:${t.analystId}`]);
    const audit = await h.ctx.db.root
      .selectFrom("console_audit")
      .selectAll()
      .where("tenant_id", "=", t.partner.tenantId)
      .where("action", "=", "provider.action")
      .execute();
    expect(audit.map((a) => a.after)).toEqual([
      { brokerId: "sumsub", action: "regenerate_link", kind: "pending", outcome: "ok" },
    ]);
    // The link itself is kept nowhere: not in the action's record, not in the audit row.
    const kept = await h.ctx.db.root
      .selectFrom("provider_actions")
      .selectAll()
      .where("case_id", "=", caseId)
      .execute();
    expect(kept.map((k) => [k.action, k.outcome, k.output])).toEqual([["regenerate_link", "ok", null]]);
    expect(JSON.stringify(audit)).not.toContain("websdk");

    // The action's vendor call is on the paused node's step of the trace, by the analyst; no link.
    const traced = await h.app.inject({
      method: "GET",
      url: `/admin/cases/${caseId}`,
      headers: adminHeaders,
    });
    const idv = (traced.json().trace as Array<Record<string, unknown>>).find((e) => e.nodeId === "idv");
    expect(idv?.status).toBe("waiting");
    expect(idv?.actionCalls).toEqual([
      {
        action: "websdk_link",
        actor: `analyst:${t.analystId}`,
        attempt: 1,
        httpStatus: 200,
        durationMs: expect.any(Number),
        outcome: "ok",
        at: expect.any(String),
      },
    ]);
    expect(JSON.stringify(idv)).not.toContain("/websdk/p/");

    // A handle that is not this case's, or an action it does not offer, is refused with 409.
    const wrong = await t.analyst.post(`/console/cases/${caseId}/provider-actions`, {
      kind: "pending",
      brokerId: "sumsub",
      actionId: "mint_money",
      handle,
    });
    expect(wrong.statusCode).toBe(409);
    expect(rig.sumsub.stats.requests.websdk_link).toBe(links + 1);

    // A durable action without its required parameter is 400, and the vendor is not called.
    const shares = rig.sumsub.stats.requests.share_token ?? 0;
    const noClient = await t.analyst.post(`/console/cases/${caseId}/provider-actions`, {
      kind: "durable",
      brokerId: "sumsub",
      actionId: "regenerate_share_token",
    });
    expect(noClient.statusCode).toBe(400);
    expect(noClient.body).toMatch(/invalid params: .*forClientId/);
    expect(rig.sumsub.stats.requests.share_token ?? 0).toBe(shares);
  });

  it("rescreens from the case page after the decision, and the hits shown are the rescreen's", async () => {
    const t = await team();
    const { caseId } = await boris(t, "cust-b6");
    expect((await markNoMatch(t, caseId)).statusCode).toBe(303);
    const page = await t.analyst.get(`/console/cases/${caseId}`);
    expect(page.body).toMatch(/Screen the case(&#39;|')s subject again/);
    const before = rig.opensanctions.stats.requests.match ?? 0;
    const run = await t.analyst.post(`/console/cases/${caseId}/provider-actions`, {
      kind: "durable",
      brokerId: "opensanctions",
      actionId: "rescreen",
    });
    expect(run.statusCode, run.body).toBe(200);
    expect(rig.opensanctions.stats.requests.match).toBe(before + 1);
    expect(run.body).toContain("No hit left to review");
    expect(run.body).toContain("1 hit marked “no match” for this subject earlier: dismissed.");
    expect(run.body).toMatch(/rescreened by/);
    // After the decision, the rescreen's vendor call is on the screening's step of the trace.
    const step = await screenStep(caseId);
    expect(step.actionCalls).toMatchObject([
      { action: "match", actor: `analyst:${t.analystId}`, httpStatus: 200, outcome: "ok" },
    ]);
    expect(step.verdicts).toMatchObject([
      { hitId: HIT, verdict: "no_match", actor: `analyst:${t.analystId}` },
    ]);
    // Another tenant's analyst cannot run it.
    const other = await team();
    await other.analyst.get("/console/queue");
    const refused = await other.analyst.post(`/console/cases/${caseId}/provider-actions`, {
      kind: "durable",
      brokerId: "opensanctions",
      actionId: "rescreen",
    });
    expect(refused.statusCode).toBe(404);
    expect(rig.opensanctions.stats.requests.match).toBe(before + 1);
  });

  it("follows the case's owner: an analyst runs no action on another's case, its owner and an admin do", async () => {
    const t = await team();
    const { caseId } = await boris(t, "cust-b7");
    const owner = await signedIn(h.app, t.partner.tenantId, "analyst");
    const admin = await signedIn(h.app, t.partner.tenantId, "admin");
    const actionForm = `action="/console/cases/${caseId}/provider-actions"`;
    const rescreen = { kind: "durable", brokerId: "opensanctions", actionId: "rescreen" };

    // Nobody owns it: the analyst sees the button.
    expect((await t.analyst.get(`/console/cases/${caseId}`)).body).toContain(actionForm);
    await owner.browser.get(`/console/cases/${caseId}`);
    const took = await owner.browser.post(`/console/cases/${caseId}/assign`, { assignee: owner.user.userId });
    expect(took.statusCode, took.body).toBe(303);

    const page = await t.analyst.get(`/console/cases/${caseId}`);
    expect(page.body).toContain('id="provider-actions"');
    expect(page.body).not.toContain(actionForm);
    expect(page.body).toContain("Another analyst owns this case: only they, or an admin, act on it.");
    const before = rig.opensanctions.stats.requests.match ?? 0;
    const refused = await t.analyst.post(`/console/cases/${caseId}/provider-actions`, rescreen);
    expect(refused.statusCode).toBe(409);
    expect(refused.body).toContain("Another analyst owns this case");
    expect(rig.opensanctions.stats.requests.match ?? 0).toBe(before);
    const none = await h.ctx.db.root
      .selectFrom("provider_actions")
      .select("actor")
      .where("case_id", "=", caseId)
      .execute();
    expect(none).toEqual([]);

    // Its owner and an admin see the button and run it.
    expect((await owner.browser.get(`/console/cases/${caseId}`)).body).toContain(actionForm);
    const byOwner = await owner.browser.post(`/console/cases/${caseId}/provider-actions`, rescreen);
    expect(byOwner.statusCode, byOwner.body).toBe(200);
    expect((await admin.browser.get(`/console/cases/${caseId}`)).body).toContain(actionForm);
    const byAdmin = await admin.browser.post(`/console/cases/${caseId}/provider-actions`, rescreen);
    expect(byAdmin.statusCode, byAdmin.body).toBe(200);
    expect(rig.opensanctions.stats.requests.match).toBe(before + 2);
    const ran = await h.ctx.db.root
      .selectFrom("provider_actions")
      .select("actor")
      .where("case_id", "=", caseId)
      .orderBy("created_at")
      .execute();
    expect(ran.map((r) => r.actor).sort()).toEqual(
      [`analyst:${owner.user.userId}`, `analyst:${admin.user.userId}`].sort(),
    );
  });

  it("offers no action on a dry run's case, and refuses one posted with 409 and no vendor call", async () => {
    const t = await team();
    const admin = await signedIn(h.app, t.partner.tenantId, "admin");
    const res = await h.app.inject({
      method: "POST",
      url: `/admin/tenants/${t.partner.tenantId}/workflows/screen/versions/1/dry-run?wait=true`,
      headers: adminHeaders,
      payload: {
        type: "KYC",
        payload: {},
        subject: {
          displayName: "Boris Blacklistov",
          person: {
            firstName: "Boris",
            lastName: "Blacklistov",
            dateOfBirth: "1970-01-01",
            nationality: "GB",
          },
        },
      },
    });
    expect(res.statusCode, res.body).toBe(201);
    const caseId = res.json().caseId as string;
    expect(res.json().dryRun).toBe(true);
    const actionForm = `action="/console/cases/${caseId}/provider-actions"`;
    for (const who of [t.analyst, admin.browser]) {
      const page = await who.get(`/console/cases/${caseId}`);
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain("dry run");
      expect(page.body).not.toContain(actionForm);
    }
    const before = rig.opensanctions.stats.requests.match ?? 0;
    const refused = await admin.browser.post(`/console/cases/${caseId}/provider-actions`, {
      kind: "durable",
      brokerId: "opensanctions",
      actionId: "rescreen",
    });
    expect(refused.statusCode).toBe(409);
    expect(refused.body).toContain("A dry run's case: no provider action is run on it.");
    expect(rig.opensanctions.stats.requests.match ?? 0).toBe(before);
  });
});
