import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chooseCases, insertBacktest, oneSnapshot } from "../src/modules/backtests/backtests.repo.js";
import { runBacktest } from "../src/modules/backtests/backtests.runner.js";
import type { WorkflowDefinition } from "../src/modules/workflows/workflow.types.js";
import type { JobWorker } from "../src/platform/jobs.js";
import { ADMIN_TOKEN, createTestApp, type TestApp } from "./support/app.js";
import { pastCases } from "./support/backtests.js";
import { runCds } from "./support/cli.js";
import { adminHeaders, createPartner, createTenant, type Partner } from "./support/fixtures.js";
import { type ProviderRig, startProviderRig } from "./support/providers.js";
import { answerRfi, waitFor } from "./support/rfi.js";
import { amountScreen, createWorkflow, eventsOf, kycSubject, waitForCase } from "./support/workflows.js";

let h: TestApp;
let url: string;
let rig: ProviderRig;
let worker: JobWorker;
beforeAll(async () => {
  h = await createTestApp();
  url = await h.app.listen({ port: 0, host: "127.0.0.1" });
  worker = await h.startWorker();
  rig = await startProviderRig(url);
});
afterAll(async () => {
  await rig.close();
  await h.close();
});

/** Generous: the tests must pass on a machine ten times slower; they wait for conditions. */
const LONG = 120_000;

const settled = (c: { status: string }) => ["decided", "in_review", "failed"].includes(c.status);

function admin(method: "GET" | "POST", path: string, payload?: unknown) {
  return h.app.inject({
    method,
    url: path,
    headers: adminHeaders,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
}

/** A window around now: every case these tests create falls in it. */
function window(): { from: string; to: string } {
  return {
    from: new Date(Date.now() - 3_600_000).toISOString(),
    to: new Date(Date.now() + 3_600_000).toISOString(),
  };
}

async function submit(
  partner: Partner,
  workflowId: string,
  payload: Record<string, unknown>,
  until: (c: { status: string }) => boolean = settled,
  subject: Record<string, unknown> = kycSubject,
): Promise<string> {
  const res = await h.app.inject({
    method: "POST",
    url: "/cases",
    headers: partner.headers,
    payload: { workflowId, type: "KYC", payload, subject },
  });
  expect(res.statusCode, res.body).toBe(201);
  const caseId = res.json().caseId as string;
  await waitForCase(h.app, partner.headers, caseId, until, LONG);
  return caseId;
}

// biome-ignore lint/suspicious/noExplicitAny: tests read answers as loose JSON
type Json = Record<string, any>;

async function start(tenantId: string, body: Record<string, unknown>): Promise<Json> {
  const res = await admin("POST", `/admin/tenants/${tenantId}/backtests`, { ...window(), ...body });
  expect(res.statusCode, res.body).toBe(202);
  expect(res.json().status).toBe("running");
  return res.json();
}

async function finished(tenantId: string, backtestId: string): Promise<Json> {
  return waitFor(
    async () => {
      const res = await admin("GET", `/admin/tenants/${tenantId}/backtests/${backtestId}`);
      expect(res.statusCode).toBe(200);
      return res.json().status === "running" ? undefined : (res.json() as Json);
    },
    LONG,
    `backtest ${backtestId} to end`,
  );
}

async function run(tenantId: string, body: Record<string, unknown>): Promise<Json> {
  const started = await start(tenantId, body);
  const done = await finished(tenantId, started.backtestId);
  expect(done.status, done.error).toBe("completed");
  return done;
}

async function casesOf(tenantId: string, backtestId: string, query = ""): Promise<Json[]> {
  const res = await admin("GET", `/admin/tenants/${tenantId}/backtests/${backtestId}/cases${query}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().cases;
}

/** Rows a backtest must never write, for the tenant: compared before and after. */
async function footprint(tenantId: string): Promise<Record<string, number>> {
  const count = async (
    table:
      | "cases"
      | "events"
      | "webhook_deliveries"
      | "information_requests"
      | "provider_runs"
      | "provider_calls"
      | "case_steps"
      | "case_waits"
      | "rfi_upload_slots",
  ) => {
    const row = await h.ctx.db.root
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<string>().as("n"))
      .where("tenant_id", "=", tenantId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  };
  const tables = [
    "cases",
    "events",
    "webhook_deliveries",
    "information_requests",
    "provider_runs",
    "provider_calls",
    "case_steps",
    "case_waits",
    "rfi_upload_slots",
  ] as const;
  const counts: Record<string, number> = {};
  for (const t of tables) counts[t] = await count(t);
  const updated = await h.ctx.db.root
    .selectFrom("cases")
    .select((eb) => eb.fn.max("updated_at").as("latest"))
    .where("tenant_id", "=", tenantId)
    .executeTakeFirstOrThrow();
  counts.casesUpdatedAt = updated.latest ? new Date(updated.latest as Date).getTime() : 0;
  return counts;
}

/** amountScreen with its threshold at `threshold`. */
function screenAt(threshold: number): WorkflowDefinition {
  const wf = structuredClone(amountScreen);
  (wf.nodes[0] as Json).rules = [{ when: `payload.amount > ${threshold}`, next: "review" }];
  return wf;
}

describe("a backtest of a lowered threshold", () => {
  it("gives the exact decision matrix, the changed cases and the nodes reached, and writes nothing", async () => {
    const partner = await createPartner(h.app);
    const { tenantId } = partner;
    await createWorkflow(h.app, tenantId, "pay", screenAt(1000));
    const ids: Record<number, string> = {};
    for (const amount of [200, 600, 900, 1500, 3000]) ids[amount] = await submit(partner, "pay", { amount });
    const candidate = await createWorkflow(h.app, tenantId, "pay", screenAt(500), { publish: false });
    const before = await footprint(tenantId);
    const deliveriesBefore = await eventsOf(h.ctx, ids[600] as string);

    const done = await run(tenantId, { workflowId: "pay", version: candidate });
    expect(done).toMatchObject({ workflowId: "pay", version: candidate, total: 5, done: 5 });
    expect(done.summary).toEqual({
      decisions: { approved: { approved: 1, in_review: 2 }, in_review: { in_review: 2 } },
      changed: 2,
      unchanged: 3,
      needsInput: 0,
      errors: 0,
      // In the order the candidate defines its nodes.
      nodes: [
        { nodeId: "screen", reached: 5, reachedBefore: 5 },
        { nodeId: "approve", reached: 1, reachedBefore: 3 },
        { nodeId: "review", reached: 4, reachedBefore: 2 },
      ],
    });
    expect(done.summary.nodes).toHaveLength(3);

    const changed = await casesOf(tenantId, done.backtestId, "?changed=true");
    expect(changed.map((c) => c.caseId).sort()).toEqual([ids[600], ids[900]].sort());
    for (const c of changed) {
      expect(c.before).toEqual({ decision: "approved", path: ["screen", "approve"], override: null });
      expect(c.after).toEqual({ decision: "in_review", path: ["screen", "review"] });
    }
    const all = await casesOf(tenantId, done.backtestId, "?limit=2");
    expect(all).toHaveLength(2);
    const unchanged = await casesOf(tenantId, done.backtestId, "?changed=false");
    expect(unchanged.map((c) => c.caseId).sort()).toEqual([ids[200], ids[1500], ids[3000]].sort());

    expect(await footprint(tenantId)).toEqual(before);
    expect(await eventsOf(h.ctx, ids[600] as string)).toEqual(deliveriesBefore);
    const kase = await h.app.inject({ method: "GET", url: `/cases/${ids[600]}`, headers: partner.headers });
    expect(kase.json().result.decision.value).toBe("approved");
  });

  it("pages the cases with a cursor, and refuses a cursor it never gave", async () => {
    const partner = await createPartner(h.app);
    await createWorkflow(h.app, partner.tenantId, "pay", screenAt(1000));
    for (const amount of [1, 2, 3]) await submit(partner, "pay", { amount });
    const done = await run(partner.tenantId, { workflowId: "pay", version: 1 });
    const base = `/admin/tenants/${partner.tenantId}/backtests/${done.backtestId}/cases`;
    const first = (await admin("GET", `${base}?limit=2`)).json();
    expect(first.cases).toHaveLength(2);
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = (await admin("GET", `${base}?limit=2&cursor=${first.nextCursor}`)).json();
    expect(second.cases).toHaveLength(1);
    expect(second.nextCursor).toBeNull();
    const ids = [...first.cases, ...second.cases].map((c: Json) => c.caseId);
    expect(new Set(ids).size).toBe(3);
    const bad = await admin("GET", `${base}?cursor=abc`);
    expect(bad.statusCode).toBe(400);
    expect(bad.json().code ?? bad.json().error).toMatch(/invalid_request|cursor/);
  });

  it("runs from the CLI: run --wait prints the matrix, cases prints the changed cases", async () => {
    const partner = await createPartner(h.app);
    const { tenantId } = partner;
    await createWorkflow(h.app, tenantId, "pay", screenAt(1000));
    const low = await submit(partner, "pay", { amount: 700 });
    await submit(partner, "pay", { amount: 100 });
    const candidate = await createWorkflow(h.app, tenantId, "pay", screenAt(500), { publish: false });
    const { from, to } = window();
    const ran = await runCds(
      url,
      "backtest",
      "run",
      "--tenant",
      tenantId,
      "--workflow",
      "pay",
      "--version",
      String(candidate),
      "--from",
      from,
      "--to",
      to,
      "--wait",
    );
    expect(ran.code, ran.stderr).toBe(0);
    const lines = ran.stdout.split("\n");
    expect(lines).toContain("before \\ after  approved  in_review");
    expect(lines).toContain("approved               1          1");
    expect(ran.stdout).toContain("changed 1, unchanged 1, needs an input 0, failed 0");
    const backtestId = /backtest ([0-9a-f-]{36})/.exec(ran.stdout)?.[1] as string;
    const cases = await runCds(url, "backtest", "cases", "--tenant", tenantId, "--backtest", backtestId);
    expect(cases.code, cases.stderr).toBe(0);
    expect(cases.stdout.trim()).toBe(`${low}  approved → in_review  (screen → review)`);
    const shown = await runCds(
      url,
      "backtest",
      "show",
      "--tenant",
      tenantId,
      "--backtest",
      backtestId,
      "--json",
    );
    expect(JSON.parse(shown.stdout).summary.changed).toBe(1);
  });
});

describe("what a backtest replays from the record", () => {
  it("replays a callback-driven case from its recorded body", async () => {
    const partner = await createPartner(h.app);
    const flow = (accept: string): WorkflowDefinition => ({
      inputSchema: { type: "object" },
      start: "verify",
      nodes: [
        { id: "verify", type: "external_callback", expiresInSeconds: 3600, next: "check" },
        { id: "check", type: "rules", rules: [{ when: accept, next: "approve" }], default: "decline" },
        { id: "approve", type: "decision", decision: "approved" },
        { id: "decline", type: "decision", decision: "declined" },
      ],
    });
    await createWorkflow(h.app, partner.tenantId, "idv", flow("nodes.verify.result == 'clear'"));
    const results: Record<string, string> = {};
    for (const result of ["clear", "hit"]) {
      const caseId = await submit(partner, "idv", {}, (c) => c.status === "waiting");
      const dispatch = (await eventsOf(h.ctx, caseId)).find(
        (e) => e.event_type === "external_callback.dispatch",
      );
      const delivered = await h.app.inject({
        method: "POST",
        url: new URL(dispatch?.payload.callbackUrl as string).pathname,
        headers: partner.headers,
        payload: { result },
      });
      expect(delivered.statusCode, delivered.body).toBe(202);
      await waitForCase(h.app, partner.headers, caseId, settled, LONG);
      results[result] = caseId;
    }
    const waiting = await submit(partner, "idv", {}, (c) => c.status === "waiting");
    const candidate = await createWorkflow(
      h.app,
      partner.tenantId,
      "idv",
      flow("nodes.verify.result in ['clear', 'hit']"),
      { publish: false },
    );
    const before = await footprint(partner.tenantId);
    const done = await run(partner.tenantId, { workflowId: "idv", version: candidate });
    expect(done.summary).toMatchObject({
      decisions: { approved: { approved: 1 }, declined: { approved: 1 }, none: { needsInput: 1 } },
      changed: 1,
      unchanged: 1,
      needsInput: 1,
    });
    const rows = await casesOf(partner.tenantId, done.backtestId);
    const byId = new Map(rows.map((r) => [r.caseId, r]));
    expect(byId.get(results.hit as string)?.after).toEqual({
      decision: "approved",
      path: ["verify", "check", "approve"],
    });
    expect(byId.get(waiting)?.after).toEqual({ decision: null, path: ["verify"], needsInput: "verify" });
    expect(await footprint(partner.tenantId)).toEqual(before);
  });

  it("replays an information request's recorded answer", async () => {
    const partner = await createPartner(h.app);
    const flow = (accept: string): WorkflowDefinition => ({
      inputSchema: { type: "object" },
      start: "ask",
      nodes: [
        {
          id: "ask",
          type: "information_request",
          to: "'ada@example.com'",
          subject: "'Your occupation'",
          body: "'Please tell us your occupation'",
          awaitResponse: true,
          expiresInSeconds: 3600,
          next: "check",
        },
        { id: "check", type: "rules", rules: [{ when: accept, next: "approve" }], default: "review" },
        { id: "approve", type: "decision", decision: "approved" },
        { id: "review", type: "decision", decision: "in_review" },
      ],
    });
    await createWorkflow(h.app, partner.tenantId, "ask", flow("nodes.ask.fields.occupation == 'engineer'"));
    const answered: Record<string, string> = {};
    for (const occupation of ["engineer", "teacher"]) {
      const caseId = await submit(partner, "ask", {}, (c) => c.status === "waiting");
      const list = await h.app.inject({
        method: "GET",
        url: `/cases/${caseId}/rfi`,
        headers: partner.headers,
      });
      const rfiId = list.json().informationRequests[0].rfiId;
      const res = await answerRfi(h.app, partner, caseId, rfiId, {
        fields: [{ key: "occupation", value: occupation }],
      });
      expect(res.statusCode, res.body).toBe(200);
      await waitForCase(h.app, partner.headers, caseId, settled, LONG);
      answered[occupation] = caseId;
    }
    const candidate = await createWorkflow(
      h.app,
      partner.tenantId,
      "ask",
      flow("nodes.ask.fields.occupation in ['engineer', 'teacher']"),
      { publish: false },
    );
    const before = await footprint(partner.tenantId);
    const done = await run(partner.tenantId, { workflowId: "ask", version: candidate });
    expect(done.summary).toMatchObject({
      decisions: { approved: { approved: 1 }, in_review: { approved: 1 } },
      changed: 1,
      unchanged: 1,
      needsInput: 0,
      errors: 0,
    });
    const [row] = await casesOf(partner.tenantId, done.backtestId, "?changed=true");
    expect(row).toMatchObject({ caseId: answered.teacher, after: { decision: "approved" } });
    expect(await footprint(partner.tenantId)).toEqual(before);
  });

  it("replays a provider's recorded result without calling the vendor", async () => {
    const partner = await createPartner(h.app);
    await rig.configure(h.app, partner.tenantId);
    const flow = (hit: string): WorkflowDefinition => ({
      inputSchema: { type: "object" },
      start: "screen",
      nodes: [
        { id: "screen", type: "provider", provider: "opensanctions", next: "check" },
        { id: "check", type: "rules", rules: [{ when: hit, next: "decline" }], default: "approve" },
        { id: "approve", type: "decision", decision: "approved" },
        { id: "decline", type: "decision", decision: "declined" },
      ],
    });
    await createWorkflow(h.app, partner.tenantId, "screening", flow("nodes.screen.matched"));
    const sanctioned = {
      displayName: "Boris Blacklistov",
      person: { firstName: "Boris", lastName: "Blacklistov", dateOfBirth: "1961-03-14" },
    };
    const hit = await submit(partner, "screening", {}, settled, sanctioned);
    const clean = await submit(partner, "screening", {}, settled, kycSubject);
    const candidate = await createWorkflow(
      h.app,
      partner.tenantId,
      "screening",
      flow("nodes.screen.top_score > 2.0"),
      { publish: false },
    );
    const vendorCalls = JSON.stringify(rig.opensanctions.stats.requests);
    expect(Object.values(rig.opensanctions.stats.requests).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    const before = await footprint(partner.tenantId);
    const done = await run(partner.tenantId, { workflowId: "screening", version: candidate });
    expect(done.summary).toMatchObject({
      decisions: { declined: { approved: 1 }, approved: { approved: 1 } },
      changed: 1,
      unchanged: 1,
    });
    const rows = new Map((await casesOf(partner.tenantId, done.backtestId)).map((r) => [r.caseId, r]));
    expect(rows.get(hit)?.before).toMatchObject({
      decision: "declined",
      path: ["screen", "check", "decline"],
    });
    expect(rows.get(clean)?.after).toEqual({ decision: "approved", path: ["screen", "check", "approve"] });
    expect(JSON.stringify(rig.opensanctions.stats.requests)).toBe(vendorCalls);
    expect(await footprint(partner.tenantId)).toEqual(before);
  });

  it("ends a case's replay as needsInput at a new external node", async () => {
    const partner = await createPartner(h.app);
    await createWorkflow(h.app, partner.tenantId, "pay", screenAt(1000));
    await submit(partner, "pay", { amount: 100 });
    await submit(partner, "pay", { amount: 5000 });
    const withCallback = screenAt(1000);
    withCallback.start = "verify";
    withCallback.nodes.unshift({
      id: "verify",
      type: "external_callback",
      expiresInSeconds: 60,
      next: "screen",
    });
    const candidate = await createWorkflow(h.app, partner.tenantId, "pay", withCallback, { publish: false });
    const done = await run(partner.tenantId, { workflowId: "pay", version: candidate });
    expect(done.summary).toMatchObject({
      decisions: { approved: { needsInput: 1 }, in_review: { needsInput: 1 } },
      changed: 0,
      unchanged: 0,
      needsInput: 2,
      errors: 0,
    });
    for (const row of await casesOf(partner.tenantId, done.backtestId)) {
      expect(row.after).toEqual({ decision: null, path: ["verify"], needsInput: "verify" });
      expect(row.before.decision).not.toBeNull();
    }
    expect(await casesOf(partner.tenantId, done.backtestId, "?changed=true")).toEqual([]);
  });

  it("takes the workflow's own decision as before, an analyst's override beside it", async () => {
    const partner = await createPartner(h.app);
    await createWorkflow(h.app, partner.tenantId, "pay", screenAt(1000));
    const caseId = await submit(partner, "pay", { amount: 5000 });
    const override = await admin("POST", `/admin/cases/${caseId}/decision`, {
      value: "approved",
      actor: "jane",
    });
    expect(override.statusCode, override.body).toBe(200);
    const done = await run(partner.tenantId, { workflowId: "pay", version: 1 });
    expect(done.summary).toMatchObject({
      decisions: { in_review: { in_review: 1 } },
      changed: 0,
      unchanged: 1,
    });
    const [row] = await casesOf(partner.tenantId, done.backtestId);
    expect(row?.before).toEqual({ decision: "in_review", path: ["screen", "review"], override: "approved" });
    expect(row?.after.decision).toBe("in_review");
  });

  it("gives each step the attributes it read; any other, and every one of a case recorded before, as they are now, flagged", async () => {
    const partner = await createPartner(h.app);
    const flow = (when: string): WorkflowDefinition => ({
      inputSchema: { type: "object" },
      start: "risk",
      nodes: [
        { id: "risk", type: "rules", rules: [{ when, next: "review" }], default: "approve" },
        { id: "approve", type: "decision", decision: "approved" },
        { id: "review", type: "decision", decision: "in_review" },
      ],
    });
    const setRisk = async (attributes: Record<string, unknown>) => {
      const res = await h.app.inject({
        method: "POST",
        url: "/customer-attributes",
        headers: partner.headers,
        payload: { externalCustomerId: "cust-42", attributes },
      });
      expect(res.statusCode, res.body).toBe(200);
    };
    await createWorkflow(h.app, partner.tenantId, "risk", flow("customer.attributes.risk == 'high'"));
    await setRisk({ risk: "high", tier: "gold" });
    const recorded = await submit(partner, "risk", {});
    const legacy = await submit(partner, "risk", {});
    const trace = (await admin("GET", `/admin/cases/${recorded}`)).json().trace;
    expect(trace[0]).toMatchObject({ nodeId: "risk", attributes: { risk: "high" } });
    expect(trace[0].attributes).not.toHaveProperty("tier");
    // A case accepted before attributes were recorded has none in its steps.
    await h.ctx.db.root
      .updateTable("case_steps")
      .set({ explain: null })
      .where("case_id", "=", legacy)
      .execute();
    await setRisk({ risk: "low", tier: "silver" });

    const same = await run(partner.tenantId, { workflowId: "risk", version: 1 });
    const rows = new Map((await casesOf(partner.tenantId, same.backtestId)).map((r) => [r.caseId, r]));
    expect(rows.get(recorded)?.after).toEqual({ decision: "in_review", path: ["risk", "review"] });
    expect(rows.get(legacy)?.after).toEqual({
      decision: "approved",
      path: ["risk", "approve"],
      current: ["attributes"],
    });

    const candidate = await createWorkflow(
      h.app,
      partner.tenantId,
      "risk",
      flow("customer.attributes.risk == 'high' && customer.attributes.tier == 'silver'"),
      { publish: false },
    );
    const wider = await run(partner.tenantId, { workflowId: "risk", version: candidate });
    const after = new Map((await casesOf(partner.tenantId, wider.backtestId)).map((r) => [r.caseId, r]));
    expect(after.get(recorded)?.after).toEqual({
      decision: "in_review",
      path: ["risk", "review"],
      current: ["attributes"],
    });
  });
});

describe("the cases a backtest takes", () => {
  it("takes only the workflow's cases accepted in [from, to), and an even sample of them", async () => {
    const partner = await createPartner(h.app);
    await createWorkflow(h.app, partner.tenantId, "pay", screenAt(1000));
    await createWorkflow(h.app, partner.tenantId, "other", screenAt(1000));
    const early = await submit(partner, "pay", { amount: 1 });
    const earlyAt = (
      await h.app.inject({ method: "GET", url: `/cases/${early}`, headers: partner.headers })
    ).json().createdAt as string;
    await waitFor(async () => (Date.now() > new Date(earlyAt).getTime() + 5 ? true : undefined));
    const from = new Date(new Date(earlyAt).getTime() + 1).toISOString();
    const inside: string[] = [];
    for (const amount of [2, 3, 4, 5]) inside.push(await submit(partner, "pay", { amount }));
    await submit(partner, "other", { amount: 6 });
    const to = new Date(Date.now() + 60_000).toISOString();

    const windowed = await run(partner.tenantId, { workflowId: "pay", version: 1, from, to });
    expect(windowed.total).toBe(4);
    const ids = (await casesOf(partner.tenantId, windowed.backtestId)).map((r) => r.caseId);
    expect(ids).toEqual(inside);

    const sampled = await run(partner.tenantId, { workflowId: "pay", version: 1, from, to, sample: 2 });
    expect(sampled).toMatchObject({ total: 2, done: 2, sample: 2 });
    const picked = (await casesOf(partner.tenantId, sampled.backtestId)).map((r) => r.caseId);
    expect(picked).toEqual([inside[1], inside[3]]);

    const none = await run(partner.tenantId, {
      workflowId: "pay",
      version: 1,
      from: new Date(Date.now() + 120_000).toISOString(),
      to: new Date(Date.now() + 180_000).toISOString(),
    });
    expect(none).toMatchObject({ total: 0, done: 0, status: "completed" });
  });
});

describe("choosing a backtest's cases in chunks", () => {
  it("takes the same cases, in the same order and sample, as one statement, and pauses between chunks", async () => {
    const partner = await createPartner(h.app);
    const tenantId = partner.tenantId;
    await pastCases(h.ctx.db, tenantId, 61);
    // Four cases a time (ties broken by id): a chunk may end between two cases of one time.
    await sql`
      UPDATE cases SET created_at = to_timestamp(floor(extract(epoch FROM created_at) / 4) * 4)
      WHERE tenant_id = ${tenantId}::uuid`.execute(h.ctx.db.root);
    const { rows: ordered } = await sql<{ id: string }>`
      SELECT id FROM cases WHERE tenant_id = ${tenantId}::uuid ORDER BY created_at, id`.execute(
      h.ctx.db.root,
    );
    const n = ordered.length;
    expect(n).toBe(61);
    // Contract section 8: every case of the window, or each `n / sample`-th.
    const expected = (sample: number | null) =>
      ordered
        .filter(
          (_, i) =>
            sample === null ||
            n <= sample ||
            Math.floor(((i + 1) * sample) / n) > Math.floor((i * sample) / n),
        )
        .map((r, i) => ({ ordinal: i + 1, case_id: r.id }));
    const { from, to } = window();
    for (const sample of [null, 1, 2, 7, 60, 61, 100]) {
      for (const chunk of [1, 4, 1000]) {
        const b = await insertBacktest(h.ctx.db.root, {
          id: randomUUID(),
          tenantId,
          workflowId: "pay",
          version: 1,
          from: new Date(from),
          to: new Date(to),
          caseType: null,
          sample,
          summary: { decisions: {}, changed: 0, unchanged: 0, needsInput: 0, errors: 0, nodes: {} },
        });
        let pauses = 0;
        const total = await h.ctx.db.transaction(async (tx) => {
          await oneSnapshot(tx);
          return chooseCases(tx, b, chunk, async () => {
            pauses += 1;
          });
        });
        const label = `sample ${sample}, chunks of ${chunk}`;
        const { rows } = await sql<{ ordinal: number; case_id: string }>`
          SELECT ordinal, case_id FROM backtest_cases WHERE backtest_id = ${b.id}::uuid ORDER BY ordinal`.execute(
          h.ctx.db.root,
        );
        expect(rows, label).toEqual(expected(sample));
        expect(total, label).toBe(rows.length);
        // A pause after each full chunk; with a sample, the window is read twice (counted, then chosen).
        expect(pauses, label).toBe((sample === null ? 1 : 2) * Math.floor(n / chunk));
      }
    }
  });
});

describe("running backtests", () => {
  it("allows 3 of a tenant's at once (409 backtest_limit_reached), and cancels one", async () => {
    const partner = await createPartner(h.app);
    const other = await createPartner(h.app);
    for (const p of [partner, other]) {
      await createWorkflow(h.app, p.tenantId, "pay", screenAt(1000));
      await submit(p, "pay", { amount: 10 });
    }
    // With the worker stopped, the backtests stay running until it starts again.
    await worker.stop();
    try {
      const started: Json[] = [];
      for (let i = 0; i < 3; i++)
        started.push(await start(partner.tenantId, { workflowId: "pay", version: 1 }));
      const refused = await admin("POST", `/admin/tenants/${partner.tenantId}/backtests`, {
        ...window(),
        workflowId: "pay",
        version: 1,
      });
      expect(refused.statusCode).toBe(409);
      expect(refused.json().code ?? refused.json().error).toBe("backtest_limit_reached");
      // Another tenant's limit is its own.
      await start(other.tenantId, { workflowId: "pay", version: 1 });

      const cancelUrl = `/admin/tenants/${partner.tenantId}/backtests/${started[0]?.backtestId}/cancel`;
      const cancelled = await admin("POST", cancelUrl);
      expect(cancelled.statusCode, cancelled.body).toBe(200);
      expect(cancelled.json()).toMatchObject({ status: "cancelled", done: 0 });
      expect((await admin("POST", cancelUrl)).json().status).toBe("cancelled");
      const fourth = await start(partner.tenantId, { workflowId: "pay", version: 1 });
      expect(fourth.status).toBe("running");
      const listed = (await admin("GET", `/admin/tenants/${partner.tenantId}/backtests`)).json().backtests;
      expect(listed).toHaveLength(4);
      expect(listed[0].backtestId).toBe(fourth.backtestId);
    } finally {
      worker = await h.startWorker();
    }
    const list = (await admin("GET", `/admin/tenants/${partner.tenantId}/backtests`)).json()
      .backtests as Json[];
    for (const b of list) {
      const end = await finished(partner.tenantId, b.backtestId);
      expect(end.status).toBe(b.status === "cancelled" ? "cancelled" : "completed");
    }
    const cancelledOne = list.find((b) => b.status === "cancelled") as Json;
    const after = (
      await admin("GET", `/admin/tenants/${partner.tenantId}/backtests/${cancelledOne.backtestId}`)
    ).json();
    expect(after).toMatchObject({ status: "cancelled", done: 0 });
    const ended = await admin(
      "POST",
      `/admin/tenants/${partner.tenantId}/backtests/${list[0]?.backtestId}/cancel`,
    );
    expect(ended.statusCode).toBe(409);
  });
});

describe("cancelling a backtest", () => {
  it("stops it at the next batch: the cases it replayed keep their results, no other is replayed", async () => {
    const partner = await createPartner(h.app);
    await createWorkflow(h.app, partner.tenantId, "pay", screenAt(1000));
    await pastCases(h.ctx.db, partner.tenantId, 20_000);
    const started = await start(partner.tenantId, {
      workflowId: "pay",
      version: 1,
      from: new Date(Date.now() - 86_400_000).toISOString(),
    });
    const path = `/admin/tenants/${partner.tenantId}/backtests/${started.backtestId}`;
    await waitFor(async () => ((await admin("GET", path)).json().done > 0 ? true : undefined), LONG);
    const cancelled = await admin("POST", `${path}/cancel`);
    expect(cancelled.statusCode, cancelled.body).toBe(200);
    expect(cancelled.json().status).toBe("cancelled");
    // The job ends (its row is gone) at its next batch at the latest.
    await waitFor(
      async () => {
        const job = await h.ctx.db.root
          .selectFrom("jobs")
          .select("id")
          .where("job_key", "=", `backtest.run:${started.backtestId}`)
          .executeTakeFirst();
        return job ? undefined : true;
      },
      LONG,
      "the backtest's job to end",
    );
    const end = (await admin("GET", path)).json();
    expect(end.status).toBe("cancelled");
    expect(end.done).toBeLessThan(20_000);
    const replayed = await h.ctx.db.root
      .selectFrom("backtest_cases")
      .select((eb) => eb.fn.countAll<string>().as("n"))
      .where("backtest_id", "=", started.backtestId)
      .where("after", "is not", null)
      .executeTakeFirstOrThrow();
    expect(Number(replayed.n)).toBe(end.done);
    const counted = Object.values(end.summary.decisions as Record<string, Record<string, number>>)
      .flatMap((row) => Object.values(row))
      .reduce((a, b) => a + b, 0);
    expect(counted).toBe(end.done);
  });
});

describe("a backtest run twice at once", () => {
  it("counts each case once, whichever run records it (as after a crash, when its job runs again)", async () => {
    const partner = await createPartner(h.app);
    await createWorkflow(h.app, partner.tenantId, "pay", screenAt(1000));
    for (const amount of [100, 2000, 300, 4000, 500]) await submit(partner, "pay", { amount });
    await worker.stop();
    let started: Json;
    try {
      started = await start(partner.tenantId, { workflowId: "pay", version: 1 });
      const payload = { tenantId: partner.tenantId, backtestId: started.backtestId as string };
      await Promise.all([
        runBacktest(h.ctx, payload),
        runBacktest(h.ctx, payload),
        runBacktest(h.ctx, payload),
      ]);
    } finally {
      worker = await h.startWorker();
    }
    const done = await finished(partner.tenantId, started.backtestId);
    expect(done).toMatchObject({ status: "completed", total: 5, done: 5 });
    expect(done.summary).toMatchObject({
      decisions: { approved: { approved: 3 }, in_review: { in_review: 2 } },
      changed: 0,
      unchanged: 5,
    });
    expect(done.summary.nodes).toContainEqual({ nodeId: "screen", reached: 5, reachedBefore: 5 });
    expect(await casesOf(partner.tenantId, started.backtestId)).toHaveLength(5);
  });
});

describe("bad input and other tenants", () => {
  it("answers 404 for an unknown workflow, version or tenant, 400 for a bad window or sample", async () => {
    const partner = await createPartner(h.app);
    await createWorkflow(h.app, partner.tenantId, "pay", screenAt(1000));
    const base = `/admin/tenants/${partner.tenantId}/backtests`;
    const { from, to } = window();
    const cases: Array<[unknown, number, string?]> = [
      [{ workflowId: "pay", version: 99, from, to }, 404],
      [{ workflowId: "nope", version: 1, from, to }, 404],
      [{ workflowId: "pay", version: 1, from: to, to: from }, 400, "from"],
      [{ workflowId: "pay", version: 1, from, to: from }, 400, "from"],
      [
        { workflowId: "pay", version: 1, from: "2025-01-01T00:00:00Z", to: "2026-01-03T00:00:00Z" },
        400,
        "to",
      ],
      [{ workflowId: "pay", version: 1, from, to, sample: 100_001 }, 400],
      [{ workflowId: "pay", version: 1, from, to, sample: 0 }, 400],
      [{ workflowId: "pay", version: 1, from: "yesterday", to }, 400],
      [{ workflowId: "pay", version: 0, from, to }, 400],
      [{ workflowId: "pay", version: 1, from, to, caseType: "Loan" }, 400],
      [{ workflowId: "pay", version: 1 }, 400],
      [{ workflowId: "pay", version: 1, from, to, extra: true }, 400],
    ];
    for (const [body, status, path] of cases) {
      const res = await admin("POST", base, body);
      expect(res.statusCode, `${JSON.stringify(body)}: ${res.body}`).toBe(status);
      if (path) expect(res.json().details?.[0]?.path).toBe(path);
    }
    // A window of exactly 366 days is allowed.
    const year = await admin("POST", base, {
      workflowId: "pay",
      version: 1,
      from: "2025-01-01T00:00:00Z",
      to: "2026-01-02T00:00:00Z",
    });
    expect(year.statusCode, year.body).toBe(202);
    await finished(partner.tenantId, year.json().backtestId);
    const unknownTenant = await admin(
      "POST",
      "/admin/tenants/00000000-0000-4000-8000-000000000000/backtests",
      {
        workflowId: "pay",
        version: 1,
        from,
        to,
      },
    );
    expect(unknownTenant.statusCode).toBe(404);
    for (const path of [`${base}/not-a-uuid`, `${base}/00000000-0000-4000-8000-000000000000/cases`]) {
      expect((await admin("GET", path)).statusCode, path).toBe(404);
    }
  });

  it("keeps a tenant's backtests from every other tenant (404), and from callers without the operator token (401)", async () => {
    const owner = await createPartner(h.app);
    const stranger = await createTenant(h.app, "Other Bank");
    await createWorkflow(h.app, owner.tenantId, "pay", screenAt(1000));
    await submit(owner, "pay", { amount: 5 });
    const done = await run(owner.tenantId, { workflowId: "pay", version: 1 });
    const id = done.backtestId;
    for (const [method, path] of [
      ["GET", `/admin/tenants/${stranger}/backtests/${id}`],
      ["GET", `/admin/tenants/${stranger}/backtests/${id}/cases`],
      ["POST", `/admin/tenants/${stranger}/backtests/${id}/cancel`],
    ] as const) {
      expect((await admin(method, path)).statusCode, path).toBe(404);
    }
    // Another tenant's workflow is unknown to this one.
    const theirs = await admin("POST", `/admin/tenants/${stranger}/backtests`, {
      ...window(),
      workflowId: "pay",
      version: 1,
    });
    expect(theirs.statusCode).toBe(404);
    expect((await admin("GET", `/admin/tenants/${stranger}/backtests`)).json().backtests).toEqual([]);

    const routes: Array<["GET" | "POST", string, unknown]> = [
      ["POST", `/admin/tenants/${owner.tenantId}/backtests`, { ...window(), workflowId: "pay", version: 1 }],
      ["GET", `/admin/tenants/${owner.tenantId}/backtests`, undefined],
      ["GET", `/admin/tenants/${owner.tenantId}/backtests/${id}`, undefined],
      ["GET", `/admin/tenants/${owner.tenantId}/backtests/${id}/cases`, undefined],
      ["POST", `/admin/tenants/${owner.tenantId}/backtests/${id}/cancel`, undefined],
    ];
    for (const [method, path, payload] of routes) {
      for (const headers of [
        {},
        { authorization: `Bearer ${ADMIN_TOKEN}x` },
        { authorization: "Bearer nope" },
        // The operator API has no scopes: a partner's key, whatever its scopes, is not its token.
        owner.headers,
      ]) {
        const res = await h.app.inject({
          method,
          url: path,
          headers,
          ...(payload === undefined ? {} : { payload: payload as object }),
        });
        expect(res.statusCode, `${method} ${path}`).toBe(401);
      }
    }
    const list = (await admin("GET", `/admin/tenants/${owner.tenantId}/backtests`)).json().backtests;
    expect(list).toHaveLength(1);
  });
});
