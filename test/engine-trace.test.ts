import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../src/app.js";
import { createAppContext } from "../src/context.js";
import { stepJob } from "../src/modules/engine/step-jobs.js";
import type { WorkflowDefinition } from "../src/modules/workflows/workflow.types.js";
import type { App } from "../src/platform/app-types.js";
import type { AppContext } from "../src/platform/context.js";
import { enqueue, type JobWorker } from "../src/platform/jobs.js";
import { createLogger } from "../src/platform/logger.js";
import { startWorker } from "../src/worker.js";
import { testConfig } from "./support/app.js";
import { runCds } from "./support/cli.js";
import { createTestDatabase, type TestDatabase } from "./support/db.js";
import { adminHeaders, createPartner, createStoredCase, type Partner } from "./support/fixtures.js";
import { answerRfi } from "./support/rfi.js";
import { createWorkflow, eventsOf, kycSubject, waitForCase } from "./support/workflows.js";

/** Every log line of the app and its worker. */
const lines: string[] = [];
let app: App;
let ctx: AppContext;
let database: TestDatabase;
let worker: JobWorker;
let url: string;

beforeAll(async () => {
  database = await createTestDatabase();
  const config = testConfig({ logLevel: "info", publicUrl: "https://cds.example.test" });
  const sink = new Writable({
    write(chunk, _encoding, callback) {
      lines.push(String(chunk));
      callback();
    },
  });
  ctx = createAppContext({ config, db: database.db, log: createLogger("info", sink) });
  app = await buildApp(ctx);
  url = await app.listen({ port: 0, host: "127.0.0.1" });
  worker = await startWorker(ctx);
});

afterAll(async () => {
  await worker.stop();
  await app.close();
  await database.drop();
  fs.rmSync(ctx.config.dataDir, { recursive: true, force: true });
});

async function submit(
  partner: Partner,
  workflowId: string,
  payload: Record<string, unknown>,
  subject: Record<string, unknown> = kycSubject,
) {
  const res = await app.inject({
    method: "POST",
    url: "/cases",
    headers: partner.headers,
    payload: {
      workflowId,
      type: "KYC",
      payload,
      subject,
    },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().caseId as string;
}

// biome-ignore lint/suspicious/noExplicitAny: tests read the operator's case record as loose JSON
async function operatorCase(caseId: string): Promise<Record<string, any>> {
  const res = await app.inject({ method: "GET", url: `/admin/cases/${caseId}`, headers: adminHeaders });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

async function settle(partner: Partner, caseId: string, until?: (c: { status: string }) => boolean) {
  await waitForCase(app, partner.headers, caseId, until);
  return operatorCase(caseId);
}

const cds = (...argv: string[]) => runCds(url, ...argv);

const timestamp = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

/** Rules (first holding rule, then the default), a score with two rules and three bands. */
const screening: WorkflowDefinition = {
  inputSchema: { type: "object", properties: { amount: { type: "number" } }, required: ["amount"] },
  start: "amount",
  nodes: [
    {
      id: "amount",
      type: "rules",
      rules: [
        { when: "payload.amount > 100000", next: "block" },
        { when: "payload.amount > 1000", next: "risk" },
      ],
      default: "country",
    },
    {
      id: "country",
      type: "rules",
      rules: [{ when: "subject.person.nationality == 'KP'", next: "block" }],
      default: "risk",
    },
    {
      id: "risk",
      type: "score",
      rules: [
        { when: "payload.amount > 500", points: 40 },
        { when: "subject.person.nationality == 'GB'", points: -5 },
        { when: "payload.amount > 5000", points: 30 },
      ],
      bands: [
        { minScore: -5, decision: "approved" },
        { minScore: 60, decision: "declined" },
        { minScore: 30, decision: "in_review" },
      ],
      output: { score: "nodes.risk.score" },
    },
    { id: "block", type: "decision", decision: "declined" },
  ],
};

describe("the trace of GET /admin/cases/{caseId}", () => {
  it("shows rules by the index of the rule that held, and the score's contributions and band", async () => {
    const partner = await createPartner(app);
    await createWorkflow(app, partner.tenantId, "screening", screening);
    const caseId = await submit(partner, "screening", { amount: 2000 });
    const record = await settle(partner, caseId);
    expect(record).toMatchObject({ caseId, tenantId: partner.tenantId, status: "in_review" });
    expect(record.trace).toEqual([
      {
        seq: 1,
        nodeId: "amount",
        nodeType: "rules",
        status: "completed",
        startedAt: timestamp,
        finishedAt: timestamp,
        output: { matchedRule: 1, next: "risk" },
        next: "risk",
        matched: 1,
      },
      {
        seq: 2,
        nodeId: "risk",
        nodeType: "score",
        status: "completed",
        startedAt: timestamp,
        finishedAt: timestamp,
        output: { score: 35, decision: "in_review" },
        next: null,
        score: 35,
        contributions: [
          { index: 0, points: 40 },
          { index: 1, points: -5 },
        ],
        band: 2,
      },
    ]);
  });

  it("shows the default when no rule held, and a fixed decision", async () => {
    const partner = await createPartner(app);
    await createWorkflow(app, partner.tenantId, "screening", screening);
    const kp = { ...kycSubject, person: { ...kycSubject.person, nationality: "KP" } };
    const caseId = await submit(partner, "screening", { amount: 10 }, kp);
    const record = await settle(partner, caseId);
    expect(record.status).toBe("decided");
    expect(record.trace.map((e: Record<string, unknown>) => [e.nodeId, e.matched, e.next])).toEqual([
      ["amount", "default", "country"],
      ["country", 0, "block"],
      ["block", "default", null],
    ]);
  });

  it("shows which case of a decision node held", async () => {
    const partner = await createPartner(app);
    await createWorkflow(app, partner.tenantId, "cases", {
      inputSchema: { type: "object" },
      start: "decide",
      nodes: [
        {
          id: "decide",
          type: "decision",
          cases: [
            { when: "payload.level == 'high'", decision: "declined" },
            { when: "payload.level == 'mid'", decision: "in_review" },
          ],
          default: "approved",
        },
      ],
    });
    const mid = await settle(partner, await submit(partner, "cases", { level: "mid" }));
    expect(mid.trace).toMatchObject([
      { nodeType: "decision", matched: 1, output: { decision: "in_review" } },
    ]);
    const low = await settle(partner, await submit(partner, "cases", { level: "low" }));
    expect(low.trace).toMatchObject([{ matched: "default", output: { decision: "approved" } }]);
  });

  it("shows a paused callback node as waiting, then completed with the callback body", async () => {
    const partner = await createPartner(app);
    await createWorkflow(app, partner.tenantId, "callback", {
      inputSchema: { type: "object" },
      start: "tell",
      nodes: [
        { id: "tell", type: "notify", output: { n: "1" }, next: "verify" },
        { id: "verify", type: "external_callback", expiresInSeconds: 3600, next: "done" },
        { id: "done", type: "decision", decision: "approved" },
      ],
    });
    const caseId = await submit(partner, "callback", {});
    const waiting = await settle(partner, caseId);
    expect(waiting.status).toBe("waiting");
    expect(waiting.trace).toMatchObject([
      { seq: 1, nodeId: "tell", nodeType: "notify", status: "completed", output: { n: 1 }, next: "verify" },
      {
        seq: 2,
        nodeId: "verify",
        nodeType: "external_callback",
        status: "waiting",
        finishedAt: null,
        next: null,
      },
    ]);
    const dispatch = (await eventsOf(ctx, caseId)).find((e) => e.event_type === "external_callback.dispatch");
    const callbackPath = new URL(dispatch?.payload.callbackUrl as string).pathname;
    const delivered = await app.inject({
      method: "POST",
      url: callbackPath,
      headers: partner.headers,
      payload: { verified: true },
    });
    expect(delivered.statusCode).toBe(202);
    const decided = await settle(partner, caseId, (c) => c.status === "decided");
    expect(decided.trace).toMatchObject([
      { nodeId: "tell" },
      {
        nodeId: "verify",
        status: "completed",
        output: { verified: true },
        next: "done",
        finishedAt: timestamp,
      },
      { seq: 3, nodeId: "done", status: "completed" },
    ]);
  });

  it("shows an information request node waiting, then the answer it went on with", async () => {
    const partner = await createPartner(app);
    await createWorkflow(app, partner.tenantId, "ask", {
      inputSchema: { type: "object" },
      start: "ask",
      nodes: [
        {
          id: "ask",
          type: "information_request",
          to: "'kyc@example.com'",
          subject: "'Income'",
          body: "'Please state your income'",
          awaitResponse: true,
          expiresInSeconds: 3600,
          next: "done",
        },
        { id: "done", type: "decision", decision: "approved" },
      ],
    });
    const caseId = await submit(partner, "ask", {});
    const waiting = await settle(partner, caseId);
    expect(waiting.trace).toMatchObject([{ nodeType: "information_request", status: "waiting" }]);
    const rfiId = waiting.trace[0].output.rfiId as string;
    const answered = await answerRfi(app, partner, caseId, rfiId, {
      fields: [{ key: "income", value: 4200 }],
    });
    expect(answered.statusCode, answered.body).toBe(200);
    const decided = await settle(partner, caseId, (c) => c.status === "decided");
    expect(decided.trace).toMatchObject([
      {
        nodeId: "ask",
        status: "completed",
        output: { status: "answered", fields: { income: 4200 } },
        next: "done",
      },
      { nodeId: "done", status: "completed" },
    ]);
  });

  it("answers 404 for an unknown or malformed case id and 401 without the operator token", async () => {
    const unknown = await app.inject({
      method: "GET",
      url: "/admin/cases/00000000-0000-4000-8000-000000000000",
      headers: adminHeaders,
    });
    expect(unknown.statusCode).toBe(404);
    const malformed = await app.inject({ method: "GET", url: "/admin/cases/nope", headers: adminHeaders });
    expect(malformed.statusCode).toBe(404);
    const anonymous = await app.inject({ method: "GET", url: "/admin/cases/nope" });
    expect(anonymous.statusCode).toBe(401);
  });
});

describe("a case whose workflow errors", () => {
  it("ends failed with the error recorded, sends case.failed, and logs a warning naming case and node", async () => {
    const partner = await createPartner(app);
    await createWorkflow(app, partner.tenantId, "broken", {
      inputSchema: { type: "object" },
      start: "check",
      nodes: [
        {
          id: "check",
          type: "rules",
          rules: [{ when: "payload.missing.deep > 3", next: "ok" }],
          default: "ok",
        },
        { id: "ok", type: "decision", decision: "approved" },
      ],
    });
    const caseId = await submit(partner, "broken", { secret: "Ada's passport" });
    const record = await settle(partner, caseId);
    expect(record.status).toBe("failed");
    expect(record.trace).toMatchObject([
      { nodeId: "check", status: "failed", error: { message: expect.stringMatching(/check/) } },
    ]);
    const failed = (await eventsOf(ctx, caseId)).filter((e) => e.event_type === "case.failed");
    expect(failed.map((e) => e.payload)).toEqual([
      {
        event_type: "case.failed",
        case_id: caseId,
        tenant_id: partner.tenantId,
        external_customer_id: "cust-42",
        error: { nodeId: "check", message: record.error.message },
        timestamp,
      },
    ]);
    const warnings = lines
      .map((l) => JSON.parse(l))
      .filter((l) => l.msg === "case failed" && l.caseId === caseId);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 40, caseId, nodeId: "check", tenantId: partner.tenantId });
    expect(JSON.stringify(warnings)).not.toMatch(/Ada|passport/);
  });

  it("fails a case whose step cannot be completed once its attempts run out, leaving none undecided", async () => {
    const partner = await createPartner(app);
    await createWorkflow(app, partner.tenantId, "kyc", screening);
    const caseId = await createStoredCase(ctx, partner.tenantId);
    // A step the engine cannot run however often it tries: its node is not in the workflow.
    await ctx.db.root
      .updateTable("cases")
      .set({ status: "running", current_node_id: "ghost" })
      .where("id", "=", caseId)
      .execute();
    await enqueue(ctx.db.root, { ...stepJob(partner.tenantId, caseId, 1, "ghost"), maxAttempts: 2 });
    const record = await settle(partner, caseId, (c) => c.status === "failed");
    expect(record.error).toMatchObject({
      nodeId: "ghost",
      message: "node ghost: the step could not be completed after 2 attempts",
    });
    expect(record.trace).toMatchObject([{ seq: 1, nodeId: "ghost", nodeType: "unknown", status: "failed" }]);
    const events = await eventsOf(ctx, caseId);
    expect(events.map((e) => e.event_type)).toEqual(["case.failed"]);
    const job = await ctx.db.root
      .selectFrom("jobs")
      .select(["failed_at", "attempts"])
      .where("job_key", "=", `step:${caseId}:1`)
      .executeTakeFirstOrThrow();
    expect(job.failed_at).not.toBeNull();
    expect(job.attempts).toBe(2);
  });

  it("hands a new case that cannot be started to a step job, which fails it once its attempts run out", async () => {
    const partner = await createPartner(app);
    await createWorkflow(app, partner.tenantId, "kyc", screening);
    const caseId = await createStoredCase(ctx, partner.tenantId);
    // A received case whose start node is not in its workflow: the starter cannot run it.
    await ctx.db.root
      .updateTable("cases")
      .set({ current_node_id: "ghost" })
      .where("id", "=", caseId)
      .execute();
    const key = `step:${caseId}:1`;
    for (let i = 0; i < 200; i++) {
      const job = await ctx.db.root
        .selectFrom("jobs")
        .select("id")
        .where("job_key", "=", key)
        .executeTakeFirst();
      if (job) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    await ctx.db.root.updateTable("jobs").set({ max_attempts: 2 }).where("job_key", "=", key).execute();
    const record = await settle(partner, caseId, (c) => c.status === "failed");
    expect(record.error).toMatchObject({ nodeId: "ghost" });
    expect((await eventsOf(ctx, caseId)).map((e) => e.event_type)).toEqual(["case.failed"]);
  });

  it("fails a case whose provider node cannot reach its broker, with a failed trace entry naming it", async () => {
    const partner = await createPartner(app);
    const put = await app.inject({
      method: "PUT",
      url: `/admin/tenants/${partner.tenantId}/providers/opensanctions`,
      headers: adminHeaders,
      payload: { baseUrl: "https://api.opensanctions.example", credentials: { apiKey: "k" } },
    });
    expect(put.statusCode).toBe(200);
    await createWorkflow(app, partner.tenantId, "screen", {
      inputSchema: { type: "object" },
      start: "screen",
      nodes: [
        { id: "screen", type: "provider", provider: "opensanctions", next: "ok" },
        { id: "ok", type: "decision", decision: "approved" },
      ],
    });
    await app.inject({
      method: "DELETE",
      url: `/admin/tenants/${partner.tenantId}/providers/opensanctions`,
      headers: adminHeaders,
    });
    const record = await settle(partner, await submit(partner, "screen", {}));
    expect(record.status).toBe("failed");
    expect(record.trace).toMatchObject([
      { nodeType: "provider", status: "failed", brokerId: "opensanctions", calls: [] },
    ]);
  });
});

describe("node ids with a hyphen", () => {
  it('are accepted and read in expressions as nodes["kyc-check"]', async () => {
    const partner = await createPartner(app);
    await createWorkflow(app, partner.tenantId, "hyphens", {
      inputSchema: { type: "object" },
      start: "kyc-check",
      nodes: [
        {
          id: "kyc-check",
          type: "rules",
          rules: [{ when: "payload.amount > 10", next: "final-decision" }],
          default: "final-decision",
        },
        {
          id: "final-decision",
          type: "decision",
          cases: [{ when: 'nodes["kyc-check"].matchedRule == 0', decision: "in_review" }],
          default: "approved",
          output: { via: 'nodes["kyc-check"].next' },
        },
      ],
    });
    const record = await settle(partner, await submit(partner, "hyphens", { amount: 50 }));
    expect(record.status).toBe("in_review");
    expect(record.result.workflow_result).toEqual({ via: "final-decision" });
    expect(record.trace.map((e: Record<string, unknown>) => e.nodeId)).toEqual([
      "kyc-check",
      "final-decision",
    ]);
  });

  it("name the node in the message when an expression reads one that does not exist", async () => {
    const partner = await createPartner(app);
    const res = await app.inject({
      method: "POST",
      url: `/admin/tenants/${partner.tenantId}/workflows/typo/versions`,
      headers: adminHeaders,
      payload: {
        inputSchema: { type: "object" },
        start: "kyc-check",
        nodes: [
          {
            id: "kyc-check",
            type: "rules",
            rules: [{ when: 'nodes["kyc-chek"].score > 1', next: "ok" }],
            default: "ok",
          },
          { id: "ok", type: "decision", decision: "approved" },
        ],
      },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().details).toContainEqual({
      path: "nodes[0].rules[0].when",
      message: 'reads nodes["kyc-chek"], but there is no node "kyc-chek"',
    });
  });
});

describe("dry runs", () => {
  it("take a whole case submission and, with wait=true, answer with the decided case and its trace", async () => {
    const partner = await createPartner(app);
    await createWorkflow(app, partner.tenantId, "screening", screening, { publish: false });
    const res = await app.inject({
      method: "POST",
      url: `/admin/tenants/${partner.tenantId}/workflows/screening/versions/1/dry-run?wait=true`,
      headers: adminHeaders,
      payload: {
        workflowId: "some-other-workflow",
        workflowVersion: 9,
        idempotencyKey: "dry-1",
        type: "KYC",
        payload: { amount: 200000 },
        subject: kycSubject,
      },
    });
    expect(res.statusCode, res.body).toBe(201);
    const record = res.json();
    expect(record).toMatchObject({
      tenantId: partner.tenantId,
      workflowId: "screening",
      workflowVersion: 1,
      dryRun: true,
      status: "decided",
      result: { decision: { value: "declined" } },
    });
    expect(record.trace.map((e: Record<string, unknown>) => [e.nodeId, e.matched])).toEqual([
      ["amount", 0],
      ["block", "default"],
    ]);
    const deliveries = await ctx.db.root
      .selectFrom("webhook_deliveries")
      .select("id")
      .where("case_id", "=", record.caseId)
      .execute();
    expect(deliveries).toEqual([]);
  });

  it("answer 400 for an invalid submission, 404 for an unknown version and 401 without the token", async () => {
    const partner = await createPartner(app);
    await createWorkflow(app, partner.tenantId, "screening", screening);
    const base = `/admin/tenants/${partner.tenantId}/workflows/screening/versions`;
    const invalid = await app.inject({
      method: "POST",
      url: `${base}/1/dry-run?wait=true`,
      headers: adminHeaders,
      payload: { type: "KYC", payload: {}, subject: kycSubject },
    });
    expect(invalid.statusCode).toBe(400);
    expect(invalid.json().details).toContainEqual(expect.objectContaining({ path: "payload.amount" }));
    const unknown = await app.inject({
      method: "POST",
      url: `${base}/7/dry-run`,
      headers: adminHeaders,
      payload: { type: "KYC", payload: { amount: 1 }, subject: kycSubject },
    });
    expect(unknown.statusCode).toBe(404);
    const anonymous = await app.inject({
      method: "POST",
      url: `${base}/1/dry-run`,
      payload: { type: "KYC", payload: { amount: 1 }, subject: kycSubject },
    });
    expect(anonymous.statusCode).toBe(401);
  });
});

describe("GET /admin/cases", () => {
  it("lists cases across tenants or for one, newest first, leaving dry runs out unless asked", async () => {
    const a = await createPartner(app);
    const b = await createPartner(app);
    await createWorkflow(app, a.tenantId, "screening", screening);
    await createWorkflow(app, b.tenantId, "screening", screening);
    const first = await submit(a, "screening", { amount: 1 });
    const second = await submit(b, "screening", { amount: 1 });
    const dry = await app.inject({
      method: "POST",
      url: `/admin/tenants/${a.tenantId}/workflows/screening/versions/1/dry-run`,
      headers: adminHeaders,
      payload: { type: "KYC", payload: { amount: 1 }, subject: kycSubject },
    });
    expect(dry.statusCode).toBe(201);

    const all = await app.inject({ method: "GET", url: "/admin/cases?limit=100", headers: adminHeaders });
    expect(all.statusCode).toBe(200);
    const ids = all.json().cases.map((c: { caseId: string }) => c.caseId);
    expect(ids.indexOf(second)).toBeLessThan(ids.indexOf(first));
    expect(ids).not.toContain(dry.json().caseId);
    expect(all.json().cases.find((c: { caseId: string }) => c.caseId === second)).toMatchObject({
      tenantId: b.tenantId,
      workflowId: "screening",
      dryRun: false,
    });

    const ofA = await app.inject({
      method: "GET",
      url: `/admin/cases?tenantId=${a.tenantId}`,
      headers: adminHeaders,
    });
    expect(ofA.json().cases.map((c: { caseId: string }) => c.caseId)).toEqual([first]);
    const dryOfA = await app.inject({
      method: "GET",
      url: `/admin/cases?tenantId=${a.tenantId}&dryRun=true`,
      headers: adminHeaders,
    });
    expect(dryOfA.json().cases.map((c: { caseId: string }) => c.caseId)).toEqual([dry.json().caseId]);

    const paged = await app.inject({ method: "GET", url: "/admin/cases?limit=1", headers: adminHeaders });
    expect(paged.json().cases).toHaveLength(1);
    const next = await app.inject({
      method: "GET",
      url: `/admin/cases?limit=1&cursor=${paged.json().nextCursor}`,
      headers: adminHeaders,
    });
    expect(next.json().cases[0].caseId).not.toBe(paged.json().cases[0].caseId);
  });

  it("answers 400 for a bad parameter or cursor and 401 without the operator token", async () => {
    for (const query of ["status=sleeping", "cursor=bm9wZQ", "createdFrom=yesterday", "tenantId=acme"]) {
      const res = await app.inject({ method: "GET", url: `/admin/cases?${query}`, headers: adminHeaders });
      expect(res.statusCode, query).toBe(400);
    }
    expect((await app.inject({ method: "GET", url: "/admin/cases" })).statusCode).toBe(401);
  });
});

describe("cds case", () => {
  it("show prints the path a case took in words: the rule that held, each score rule's points, the band, the decision", async () => {
    const partner = await createPartner(app);
    await createWorkflow(app, partner.tenantId, "screening", screening);
    const caseId = await submit(partner, "screening", { amount: 2000 });
    await settle(partner, caseId);
    const res = await cds("case", "show", "--case", caseId);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain("1. amount (rules)");
    expect(res.stdout).toContain("rule 2 (payload.amount > 1000) held: went on to risk");
    expect(res.stdout).toContain("rule 1 (payload.amount > 500) held: +40 points");
    expect(res.stdout).toContain("rule 2 (subject.person.nationality == 'GB') held: -5 points");
    expect(res.stdout).toContain("score 35");
    expect(res.stdout).toContain("band 3 (minScore 30): decided in_review");
    expect(res.stdout).toContain("Decision: in_review (risk_evaluation, node:risk)");
  });

  it("dry-run waits for the case and prints its trace; list prints the cases as JSON", async () => {
    const partner = await createPartner(app);
    await createWorkflow(app, partner.tenantId, "screening", screening);
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "cds-dry-")), "case.json");
    fs.writeFileSync(
      file,
      JSON.stringify({ workflowId: "screening", type: "KYC", payload: { amount: 5 }, subject: kycSubject }),
    );
    const dry = await cds(
      "case",
      "dry-run",
      "--tenant",
      partner.tenantId,
      "--workflow",
      "screening",
      "--version",
      "1",
      "--file",
      file,
    );
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain("(dry run)");
    expect(dry.stdout).toContain("no rule held: the default: went on to country");
    expect(dry.stdout).toContain("Decision: approved (risk_evaluation, node:risk)");
    const list = await cds("case", "list", "--tenant", partner.tenantId, "--dry-run");
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout).cases).toHaveLength(1);
  });
});
