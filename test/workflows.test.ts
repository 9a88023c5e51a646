import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  getCompiledWorkflow,
  resolveSubmissionWorkflow,
} from "../src/modules/workflows/workflows.service.js";
import { AppError } from "../src/platform/errors.js";
import { createTestApp, type TestApp } from "./support/app.js";
import { adminHeaders, createTenant } from "./support/fixtures.js";

let h: TestApp;
beforeAll(async () => {
  h = await createTestApp();
});
afterAll(async () => {
  await h.close();
});

/** A small valid definition; `label` makes versions tell apart. */
function definition(label = "v") {
  return {
    name: `screen ${label}`,
    inputSchema: {
      type: "object",
      required: ["amount"],
      properties: { amount: { type: "number" }, country: { type: "string" } },
    },
    start: "screen",
    nodes: [
      {
        id: "screen",
        type: "rules",
        rules: [{ when: "payload.amount > 1000", next: "review" }],
        default: "approve",
      },
      { id: "review", type: "decision", decision: "in_review", output: { label: `"${label}"` } },
      { id: "approve", type: "decision", decision: "approved", output: { label: `"${label}"` } },
    ],
  };
}

const versionsUrl = (tenantId: string, workflowId: string) =>
  `/admin/tenants/${tenantId}/workflows/${workflowId}/versions`;

async function create(tenantId: string, workflowId: string, body: unknown = definition()) {
  return h.app.inject({
    method: "POST",
    url: versionsUrl(tenantId, workflowId),
    headers: adminHeaders,
    payload: body as never,
  });
}

async function createOk(tenantId: string, workflowId: string, body: unknown = definition()): Promise<number> {
  const res = await create(tenantId, workflowId, body);
  expect(res.statusCode, res.body).toBe(201);
  return res.json().version;
}

async function publish(tenantId: string, workflowId: string, version: number | string) {
  return h.app.inject({
    method: "POST",
    url: `${versionsUrl(tenantId, workflowId)}/${version}/publish`,
    headers: adminHeaders,
  });
}

async function list(tenantId: string) {
  return h.app.inject({ method: "GET", url: `/admin/tenants/${tenantId}/workflows`, headers: adminHeaders });
}

async function show(tenantId: string, workflowId: string, version: number | string) {
  return h.app.inject({
    method: "GET",
    url: `${versionsUrl(tenantId, workflowId)}/${version}`,
    headers: adminHeaders,
  });
}

function isoNow(value: string): boolean {
  return new Date(value).toISOString() === value && Math.abs(Date.now() - Date.parse(value)) < 60_000;
}

describe("creating versions", () => {
  it("answers 201 {workflowId, version, createdAt} and numbers versions 1, 2, 3 per workflow", async () => {
    const tenantId = await createTenant(h.app);
    const first = await create(tenantId, "kyc-standard");
    expect(first.statusCode).toBe(201);
    expect(first.json()).toEqual({ workflowId: "kyc-standard", version: 1, createdAt: expect.any(String) });
    expect(isoNow(first.json().createdAt)).toBe(true);
    expect(await createOk(tenantId, "kyc-standard")).toBe(2);
    expect(await createOk(tenantId, "kyc-standard")).toBe(3);
    expect(await createOk(tenantId, "tx.screen_v2")).toBe(1);
    const other = await createTenant(h.app, "Other Bank");
    expect(await createOk(other, "kyc-standard")).toBe(1);
  });

  it("numbers 20 concurrent creations 1 to 20 without gaps or duplicates", async () => {
    const tenantId = await createTenant(h.app);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => create(tenantId, "busy", definition(`c${i}`))),
    );
    expect(results.map((r) => r.statusCode)).toEqual(Array(20).fill(201));
    const versions = results.map((r) => r.json().version).sort((a, b) => a - b);
    expect(versions).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    // Each number holds the definition its own creation sent.
    for (const [i, r] of results.entries()) {
      expect((await show(tenantId, "busy", r.json().version)).json().definition.name).toBe(`screen c${i}`);
    }
    const [wf] = (await list(tenantId)).json().workflows;
    expect(wf.versions).toHaveLength(20);
  });

  it("gives no number to a refused definition", async () => {
    const tenantId = await createTenant(h.app);
    expect(await createOk(tenantId, "w")).toBe(1);
    const refused = await create(tenantId, "w", { ...definition(), start: "nowhere" });
    expect(refused.statusCode).toBe(400);
    expect(await createOk(tenantId, "w")).toBe(2);
  });

  it("answers 400 naming params.workflowId for a malformed workflow id", async () => {
    const tenantId = await createTenant(h.app);
    for (const bad of ["has space", "x".repeat(65), "semi;colon"]) {
      const res = await create(tenantId, encodeURIComponent(bad));
      expect(res.statusCode, bad).toBe(400);
      expect(res.json().details[0].path).toBe("workflowId");
    }
    expect(await createOk(tenantId, "x".repeat(64))).toBe(1);
  });

  it("answers 400 for a body that is not a JSON object", async () => {
    const tenantId = await createTenant(h.app);
    const res = await create(tenantId, "w", [definition()]);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatch(/body/);
  });

  it("answers 404 for an unknown or malformed tenant", async () => {
    for (const tenantId of ["00000000-0000-4000-8000-000000000000", "nope"]) {
      const res = await create(tenantId, "w");
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ error: "tenant not found", code: "not_found" });
    }
  });

  it("keeps a version immutable in the database itself", async () => {
    const tenantId = await createTenant(h.app);
    await createOk(tenantId, "frozen");
    await expect(
      sql`UPDATE workflow_versions SET definition = '{}'::jsonb WHERE tenant_id = ${tenantId}`.execute(
        h.ctx.db.root,
      ),
    ).rejects.toThrow(/immutable/);
    expect((await publish(tenantId, "frozen", 1)).statusCode).toBe(200);
    await expect(
      sql`UPDATE workflow_versions SET published_at = NULL WHERE tenant_id = ${tenantId}`.execute(
        h.ctx.db.root,
      ),
    ).rejects.toThrow(/immutable/);
  });
});

describe("publishing", () => {
  it("answers 200 {workflowId, version, publishedAt, current: true} and makes the version current", async () => {
    const tenantId = await createTenant(h.app);
    await createOk(tenantId, "kyc");
    await createOk(tenantId, "kyc");
    const res = await publish(tenantId, "kyc", 2);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      workflowId: "kyc",
      version: 2,
      publishedAt: expect.any(String),
      current: true,
    });
    expect(isoNow(res.json().publishedAt)).toBe(true);
    const [wf] = (await list(tenantId)).json().workflows;
    expect(wf.currentVersion).toBe(2);
    expect(wf.versions.map((v: { publishedAt: string | null }) => v.publishedAt === null)).toEqual([
      true,
      false,
    ]);
  });

  it("keeps an older version published after a newer one becomes current, and can make it current again", async () => {
    const tenantId = await createTenant(h.app);
    await createOk(tenantId, "kyc");
    await createOk(tenantId, "kyc");
    const first = (await publish(tenantId, "kyc", 1)).json();
    expect((await publish(tenantId, "kyc", 2)).statusCode).toBe(200);
    let shown = (await show(tenantId, "kyc", 1)).json();
    expect(shown).toMatchObject({ publishedAt: first.publishedAt, current: false });
    const again = await publish(tenantId, "kyc", 1);
    expect(again.json()).toEqual({ ...first, current: true });
    shown = (await show(tenantId, "kyc", 1)).json();
    expect(shown.current).toBe(true);
    expect((await show(tenantId, "kyc", 2)).json().current).toBe(false);
  });

  it("answers 404 for an unknown workflow, version or tenant, and 400 for a malformed version", async () => {
    const tenantId = await createTenant(h.app);
    await createOk(tenantId, "kyc");
    expect((await publish(tenantId, "nope", 1)).statusCode).toBe(404);
    const unknown = await publish(tenantId, "kyc", 2);
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error).toBe("version 2 of workflow kyc not found");
    expect((await publish("00000000-0000-4000-8000-000000000000", "kyc", 1)).statusCode).toBe(404);
    for (const bad of ["0", "abc", "1.5", "99999999999"]) {
      const res = await publish(tenantId, "kyc", bad);
      expect(res.statusCode, bad).toBe(400);
      expect(res.json().details[0].path).toBe("version");
    }
    const other = await createTenant(h.app, "Other Bank");
    expect((await publish(other, "kyc", 1)).statusCode).toBe(404);
  });
});

describe("listing and showing", () => {
  it("lists workflows by id with every version and the current one", async () => {
    const tenantId = await createTenant(h.app);
    expect((await list(tenantId)).json()).toEqual({ workflows: [] });
    await createOk(tenantId, "tx-screen");
    await createOk(tenantId, "kyc");
    await createOk(tenantId, "kyc");
    await publish(tenantId, "kyc", 1);
    const res = await list(tenantId);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.workflows.map((w: { workflowId: string }) => w.workflowId)).toEqual(["kyc", "tx-screen"]);
    const [kyc, tx] = body.workflows;
    expect(kyc).toEqual({
      workflowId: "kyc",
      currentVersion: 1,
      versions: [
        { version: 1, createdAt: expect.any(String), publishedAt: expect.any(String) },
        { version: 2, createdAt: expect.any(String), publishedAt: null },
      ],
    });
    expect(tx).toEqual({
      workflowId: "tx-screen",
      currentVersion: null,
      versions: [{ version: 1, createdAt: expect.any(String), publishedAt: null }],
    });
    const other = await createTenant(h.app, "Other Bank");
    expect((await list(other)).json()).toEqual({ workflows: [] });
    expect((await list("00000000-0000-4000-8000-000000000000")).statusCode).toBe(404);
  });

  it("shows a version with its definition exactly as created", async () => {
    const tenantId = await createTenant(h.app);
    const def = definition("shown");
    await createOk(tenantId, "kyc", def);
    const res = await show(tenantId, "kyc", 1);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      workflowId: "kyc",
      version: 1,
      createdAt: expect.any(String),
      publishedAt: null,
      current: false,
      definition: def,
    });
    // Keys keep the order they were written in.
    expect(JSON.stringify(res.json().definition)).toBe(JSON.stringify(def));
    expect((await show(tenantId, "kyc", 2)).statusCode).toBe(404);
    expect((await show(tenantId, "other", 1)).statusCode).toBe(404);
    expect((await show(await createTenant(h.app, "Other Bank"), "kyc", 1)).statusCode).toBe(404);
  });
});

describe("operator authentication", () => {
  const endpoints = [
    { method: "POST", url: (t: string) => versionsUrl(t, "kyc"), payload: definition() },
    { method: "POST", url: (t: string) => `${versionsUrl(t, "kyc")}/1/publish` },
    { method: "GET", url: (t: string) => `/admin/tenants/${t}/workflows` },
    { method: "GET", url: (t: string) => `${versionsUrl(t, "kyc")}/1` },
  ] as const;

  it("answers 401 to every workflow endpoint without the operator token or with a wrong one", async () => {
    const tenantId = await createTenant(h.app);
    await createOk(tenantId, "kyc");
    for (const e of endpoints) {
      for (const headers of [
        {},
        { authorization: "Bearer wrong-token-0123456789" },
        { authorization: "Basic abc" },
      ]) {
        const res = await h.app.inject({
          method: e.method,
          url: e.url(tenantId),
          headers,
          ...("payload" in e ? { payload: e.payload } : {}),
        });
        expect(res.statusCode, `${e.method} ${e.url(tenantId)}`).toBe(401);
      }
    }
    expect((await list(tenantId)).json().workflows[0].versions).toHaveLength(1);
  });
});

describe("resolveSubmissionWorkflow", () => {
  async function refusal(promise: Promise<unknown>): Promise<{ code: string; details: unknown }> {
    const err = await promise.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AppError);
    const e = err as AppError;
    return { code: e.code, details: e.details };
  }

  it("runs new cases on the current version, and on a pinned version while it is published", async () => {
    const tenantId = await createTenant(h.app);
    await createOk(tenantId, "kyc", definition("one"));
    await createOk(tenantId, "kyc", definition("two"));
    await createOk(tenantId, "kyc", definition("three"));
    await publish(tenantId, "kyc", 1);
    await publish(tenantId, "kyc", 2);
    const db = h.ctx.db.root;
    const current = await resolveSubmissionWorkflow(h.ctx.nodeTypes, db, tenantId, "kyc", undefined);
    expect([current.workflowId, current.version, current.definition.name]).toEqual(["kyc", 2, "screen two"]);
    expect((await resolveSubmissionWorkflow(h.ctx.nodeTypes, db, tenantId, "kyc", 1)).version).toBe(1);
    expect(await refusal(resolveSubmissionWorkflow(h.ctx.nodeTypes, db, tenantId, "kyc", 3))).toEqual({
      code: "invalid_request",
      details: [{ path: "workflowVersion", message: "version 3 of workflow kyc is not published" }],
    });
    expect(await refusal(resolveSubmissionWorkflow(h.ctx.nodeTypes, db, tenantId, "kyc", 4))).toEqual({
      code: "invalid_request",
      details: [{ path: "workflowVersion", message: "4 is not a version of workflow kyc" }],
    });
    for (const bad of [0, -1, 1.5, 2 ** 40]) {
      expect((await refusal(resolveSubmissionWorkflow(h.ctx.nodeTypes, db, tenantId, "kyc", bad))).code).toBe(
        "invalid_request",
      );
    }
    await publish(tenantId, "kyc", 3);
    expect((await resolveSubmissionWorkflow(h.ctx.nodeTypes, db, tenantId, "kyc", undefined)).version).toBe(
      3,
    );
    expect((await resolveSubmissionWorkflow(h.ctx.nodeTypes, db, tenantId, "kyc", 3)).version).toBe(3);
  });

  it("refuses an unknown workflow, another tenant's, and one with no published version", async () => {
    const tenantId = await createTenant(h.app);
    await createOk(tenantId, "draft");
    const db = h.ctx.db.root;
    expect(
      await refusal(resolveSubmissionWorkflow(h.ctx.nodeTypes, db, tenantId, "nope", undefined)),
    ).toEqual({
      code: "invalid_request",
      details: [{ path: "workflowId", message: '"nope" is not a workflow of this tenant' }],
    });
    expect(
      await refusal(resolveSubmissionWorkflow(h.ctx.nodeTypes, db, tenantId, "draft", undefined)),
    ).toEqual({
      code: "invalid_request",
      details: [{ path: "workflowId", message: '"draft" has no published version yet' }],
    });
    expect(
      (await refusal(resolveSubmissionWorkflow(h.ctx.nodeTypes, db, tenantId, "draft", 1))).details,
    ).toEqual([{ path: "workflowVersion", message: "version 1 of workflow draft is not published" }]);
    await publish(tenantId, "draft", 1);
    const stranger = await createTenant(h.app, "Other Bank");
    expect(
      (await refusal(resolveSubmissionWorkflow(h.ctx.nodeTypes, db, stranger, "draft", undefined))).details,
    ).toEqual([{ path: "workflowId", message: '"draft" is not a workflow of this tenant' }]);
  });

  it("works inside a transaction", async () => {
    const tenantId = await createTenant(h.app);
    await createOk(tenantId, "kyc");
    await publish(tenantId, "kyc", 1);
    const version = await h.ctx.db.transaction(
      async (tx) =>
        (await resolveSubmissionWorkflow(h.ctx.nodeTypes, tx, tenantId, "kyc", undefined)).version,
    );
    expect(version).toBe(1);
  });
});

describe("getCompiledWorkflow", () => {
  it("compiles any existing version once, published or not, and answers undefined for others", async () => {
    const tenantId = await createTenant(h.app);
    await createOk(tenantId, "kyc", definition("draft"));
    const db = h.ctx.db.root;
    const compiled = await getCompiledWorkflow(h.ctx.nodeTypes, db, tenantId, "kyc", 1);
    expect(compiled?.definition.name).toBe("screen draft");
    expect(compiled?.start).toBe("screen");
    expect([...(compiled?.nodes.keys() ?? [])]).toEqual(["screen", "review", "approve"]);
    expect(await getCompiledWorkflow(h.ctx.nodeTypes, db, tenantId, "kyc", 1)).toBe(compiled);
    expect(await getCompiledWorkflow(h.ctx.nodeTypes, db, tenantId, "kyc", 2)).toBeUndefined();
    expect(await getCompiledWorkflow(h.ctx.nodeTypes, db, tenantId, "nope", 1)).toBeUndefined();
    expect(
      await getCompiledWorkflow(h.ctx.nodeTypes, db, await createTenant(h.app, "Other Bank"), "kyc", 1),
    ).toBeUndefined();
    expect(await getCompiledWorkflow(h.ctx.nodeTypes, db, tenantId, "kyc", 0)).toBeUndefined();
  });
});
