import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WorkflowDefinition } from "../src/modules/workflows/workflow.types.js";
import { ADMIN_TOKEN, createTestApp, type TestApp } from "./support/app.js";
import { runCds } from "./support/cli.js";
import { adminHeaders, createPartner, createTenant, type Partner } from "./support/fixtures.js";
import { createWorkflow, kycSubject, waitForCase } from "./support/workflows.js";

let h: TestApp;
let url: string;
beforeAll(async () => {
  h = await createTestApp();
  await h.startWorker();
  await h.app.listen({ port: 0, host: "127.0.0.1" });
  const address = h.app.server.address();
  url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
});
afterAll(async () => {
  await h.close();
});

function admin(method: "GET" | "PUT" | "POST" | "DELETE", url: string, payload?: unknown) {
  return h.app.inject({
    method,
    url,
    headers: adminHeaders,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
}

const listUrl = (tenantId: string, listId: string) => `/admin/tenants/${tenantId}/lists/${listId}`;

async function makeList(tenantId: string, listId: string, body: Record<string, unknown> = {}) {
  const res = await admin("PUT", listUrl(tenantId, listId), body);
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

async function change(tenantId: string, listId: string, body: { add?: string[]; remove?: string[] }) {
  const res = await admin("POST", `${listUrl(tenantId, listId)}/values`, body);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().valueCount as number;
}

async function values(tenantId: string, listId: string, query = "") {
  const res = await admin("GET", `${listUrl(tenantId, listId)}/values${query}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { values: string[]; nextCursor: string | null };
}

/** A payment screen: declined when its IBAN is on the tenant's block list, else approved. */
const blockScreen: WorkflowDefinition = {
  inputSchema: {
    type: "object",
    properties: { iban: { type: "string" } },
    required: ["iban"],
  },
  start: "screen",
  nodes: [
    {
      id: "screen",
      type: "rules",
      rules: [{ when: 'inList("blocked_ibans", payload.iban)', next: "decline" }],
      default: "approve",
    },
    { id: "approve", type: "decision", decision: "approved" },
    { id: "decline", type: "decision", decision: "declined" },
  ],
};

async function decide(partner: Partner, iban: string) {
  const res = await h.app.inject({
    method: "POST",
    url: "/cases",
    headers: partner.headers,
    payload: { workflowId: "payments", type: "KYC", payload: { iban }, subject: kycSubject },
  });
  expect(res.statusCode, res.body).toBe(201);
  return waitForCase(h.app, partner.headers, res.json().caseId);
}

describe("the lists operator API", () => {
  it("creates a list, sets its description, and lists it with its value count", async () => {
    const tenantId = await createTenant(h.app);
    const created = await makeList(tenantId, "allowed_countries", { description: "Where we operate" });
    expect(created).toMatchObject({
      listId: "allowed_countries",
      description: "Where we operate",
      normalize: "none",
      valueCount: 0,
    });
    await change(tenantId, "allowed_countries", { add: ["GB", "FR"] });
    const renamed = await makeList(tenantId, "allowed_countries", { description: "Countries we serve" });
    expect(renamed).toMatchObject({ description: "Countries we serve", normalize: "none", valueCount: 2 });
    await makeList(tenantId, "blocked_ibans", { normalize: "iban" });
    const res = await admin("GET", `/admin/tenants/${tenantId}/lists`);
    expect(res.statusCode).toBe(200);
    expect(
      res
        .json()
        .lists.map((l: { listId: string; valueCount: number; normalize: string }) => [
          l.listId,
          l.valueCount,
          l.normalize,
        ]),
    ).toEqual([
      ["allowed_countries", 2, "none"],
      ["blocked_ibans", 0, "iban"],
    ]);
  });

  it("adds and removes values normalised by the list's rule, each value once", async () => {
    const tenantId = await createTenant(h.app);
    await makeList(tenantId, "blocked_ibans", { normalize: "iban" });
    expect(
      await change(tenantId, "blocked_ibans", {
        add: [" de89 3704 0044 0532 0130 00 ", "DE89370400440532013000", "gb82west12345698765432"],
      }),
    ).toBe(2);
    expect(await change(tenantId, "blocked_ibans", { add: ["GB82 WEST 1234 5698 7654 32"] })).toBe(2);
    expect((await values(tenantId, "blocked_ibans")).values).toEqual([
      "DE89370400440532013000",
      "GB82WEST12345698765432",
    ]);
    expect(
      await change(tenantId, "blocked_ibans", {
        remove: ["de89370400440532013000", "FR0000000000000000000000000"],
      }),
    ).toBe(1);
    await makeList(tenantId, "raw", { normalize: "none" });
    expect(await change(tenantId, "raw", { add: [" a ", "a", "A"] })).toBe(3);
    expect((await values(tenantId, "raw")).values).toEqual([" a ", "A", "a"]);
  });

  it("pages through values by prefix and cursor, in code point order", async () => {
    const tenantId = await createTenant(h.app);
    await makeList(tenantId, "devices", { normalize: "device_id" });
    const all = Array.from({ length: 25 }, (_, i) => `dev-${String(i).padStart(2, "0")}`);
    await change(tenantId, "devices", { add: [...all, "other-1", "dev\u00e9", "dew"] });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await values(
        tenantId,
        "devices",
        `?prefix=dev-&limit=10${cursor ? `&cursor=${cursor}` : ""}`,
      );
      expect(page.values.length).toBeLessThanOrEqual(10);
      seen.push(...page.values);
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual(all);
    expect((await values(tenantId, "devices", "?prefix=dev")).values).toEqual([...all, "dev\u00e9"]);
    expect((await values(tenantId, "devices", "?prefix=zzz")).values).toEqual([]);
    expect((await values(tenantId, "devices", "?limit=2")).nextCursor).not.toBeNull();
  });

  it("refuses every invalid input with 400 naming it", async () => {
    const tenantId = await createTenant(h.app);
    await makeList(tenantId, "phones", { normalize: "phone" });
    const cases: Array<[string, "PUT" | "POST" | "GET", string, unknown]> = [
      ["listId", "PUT", listUrl(tenantId, "Bad-Id"), {}],
      ["listId", "PUT", listUrl(tenantId, "x".repeat(65)), {}],
      ["normalize", "PUT", listUrl(tenantId, "ok_list"), { normalize: "shoe_size" }],
      ["description", "PUT", listUrl(tenantId, "ok_list"), { description: "d".repeat(501) }],
      ["colour", "PUT", listUrl(tenantId, "ok_list"), { colour: "red" }],
      ["add", "POST", `${listUrl(tenantId, "phones")}/values`, { add: "+441234" }],
      ["add", "POST", `${listUrl(tenantId, "phones")}/values`, { add: [""] }],
      ["add", "POST", `${listUrl(tenantId, "phones")}/values`, { add: ["1".repeat(257)] }],
      [
        "add",
        "POST",
        `${listUrl(tenantId, "phones")}/values`,
        { add: Array.from({ length: 10_001 }, (_, i) => `+${i}`) },
      ],
      [
        "10000",
        "POST",
        `${listUrl(tenantId, "phones")}/values`,
        {
          add: Array.from({ length: 5_001 }, (_, i) => `+1${i}`),
          remove: Array.from({ length: 5_000 }, (_, i) => `+2${i}`),
        },
      ],
      ["add[1]", "POST", `${listUrl(tenantId, "phones")}/values`, { add: ["+44 1", " ( ) "] }],
      ["remove[0]", "POST", `${listUrl(tenantId, "phones")}/values`, { add: ["+44 1"], remove: ["+441"] }],
      ["add[0]", "POST", `${listUrl(tenantId, "phones")}/values`, { add: ["a\u0000b"] }],
      ["cursor", "GET", `${listUrl(tenantId, "phones")}/values?cursor=bm9wZQ!`, undefined],
      ["limit", "GET", `${listUrl(tenantId, "phones")}/values?limit=0`, undefined],
      ["limit", "GET", `${listUrl(tenantId, "phones")}/values?limit=1001`, undefined],
    ];
    for (const [field, method, url, payload] of cases) {
      const res = await admin(method, url, payload);
      expect(res.statusCode, `${field}: ${res.body.slice(0, 300)}`).toBe(400);
      expect(res.json().code).toBe("invalid_request");
      expect(res.body, field).toContain(field);
    }
    expect((await values(tenantId, "phones")).values).toEqual([]);
  });

  it("keeps a list's rule while it holds values (409 conflict)", async () => {
    const tenantId = await createTenant(h.app);
    await makeList(tenantId, "emails", { normalize: "email" });
    await change(tenantId, "emails", { add: ["Ada@Example.com"] });
    const refused = await admin("PUT", listUrl(tenantId, "emails"), { normalize: "none" });
    expect(refused.statusCode).toBe(409);
    expect(refused.json().code).toBe("conflict");
    await change(tenantId, "emails", { remove: ["ADA@example.COM"] });
    expect((await makeList(tenantId, "emails", { normalize: "none" })).normalize).toBe("none");
  });

  it("refuses a change past 1,000,000 values with 409 list_full, changing nothing", async () => {
    const tenantId = await createTenant(h.app);
    await makeList(tenantId, "big");
    await change(tenantId, "big", { add: ["kept"] });
    // The count kept on the list's row is what the limit reads: set it near the limit rather
    // than storing a million rows in this test (the bench seeds a real one).
    await h.ctx.db.root
      .updateTable("lists")
      .set({ value_count: 999_995 })
      .where("tenant_id", "=", tenantId)
      .execute();
    const full = await admin("POST", `${listUrl(tenantId, "big")}/values`, {
      add: Array.from({ length: 6 }, (_, i) => `v${i}`),
    });
    expect(full.statusCode).toBe(409);
    expect(full.json().code).toBe("list_full");
    expect((await values(tenantId, "big")).values).toEqual(["kept"]);
    expect(await change(tenantId, "big", { add: ["v0", "v1", "v2", "v3", "v4"], remove: ["kept"] })).toBe(
      999_999,
    );
  });

  it("answers 401 without the operator token or with a wrong one, on every route", async () => {
    const tenantId = await createTenant(h.app);
    await makeList(tenantId, "guarded");
    const routes: Array<["GET" | "PUT" | "POST" | "DELETE", string, unknown]> = [
      ["PUT", listUrl(tenantId, "guarded"), { description: "x" }],
      ["GET", `/admin/tenants/${tenantId}/lists`, undefined],
      ["POST", `${listUrl(tenantId, "guarded")}/values`, { add: ["x"] }],
      ["GET", `${listUrl(tenantId, "guarded")}/values`, undefined],
      ["DELETE", listUrl(tenantId, "guarded"), undefined],
    ];
    for (const [method, url, payload] of routes) {
      for (const headers of [
        {},
        { authorization: `Bearer ${ADMIN_TOKEN}x` },
        { authorization: "Bearer nope" },
      ]) {
        const res = await h.app.inject({
          method,
          url,
          headers,
          ...(payload === undefined ? {} : { payload: payload as object }),
        });
        expect(res.statusCode, `${method} ${url}`).toBe(401);
      }
    }
    expect((await values(tenantId, "guarded")).values).toEqual([]);
  });

  it("answers 404 for another tenant's list, an unknown list and an unknown tenant", async () => {
    const owner = await createTenant(h.app);
    const other = await createTenant(h.app);
    await makeList(owner, "secret_list");
    await change(owner, "secret_list", { add: ["mine"] });
    for (const [method, url, payload] of [
      ["GET", `${listUrl(other, "secret_list")}/values`, undefined],
      ["POST", `${listUrl(other, "secret_list")}/values`, { add: ["x"] }],
      ["DELETE", listUrl(other, "secret_list"), undefined],
      ["GET", `${listUrl(owner, "no_such_list")}/values`, undefined],
      ["DELETE", listUrl(owner, "Not-An-Id"), undefined],
      ["GET", "/admin/tenants/00000000-0000-4000-8000-000000000000/lists", undefined],
      ["PUT", listUrl("00000000-0000-4000-8000-000000000000", "x"), {}],
    ] as const) {
      const res = await admin(method, url, payload);
      expect(res.statusCode, `${method} ${url}`).toBe(404);
    }
    expect((await admin("GET", `/admin/tenants/${other}/lists`)).json().lists).toEqual([]);
    expect((await values(owner, "secret_list")).values).toEqual(["mine"]);
  });

  it("writes every change in the audit log, as the operator", async () => {
    const tenantId = await createTenant(h.app);
    await makeList(tenantId, "audited", { description: "first" });
    await makeList(tenantId, "audited", { description: "second" });
    await change(tenantId, "audited", { add: ["a", "b"], remove: ["c"] });
    expect((await admin("DELETE", listUrl(tenantId, "audited"))).statusCode).toBe(204);
    const rows = await h.ctx.db.root
      .selectFrom("console_audit")
      .select(["actor", "action", "target", "before", "after"])
      .where("tenant_id", "=", tenantId)
      .orderBy("id")
      .execute();
    expect(rows).toEqual([
      {
        actor: "operator",
        action: "list.create",
        target: "list:audited",
        before: null,
        after: { description: "first", normalize: "none" },
      },
      {
        actor: "operator",
        action: "list.set",
        target: "list:audited",
        before: { description: "first", normalize: "none" },
        after: { description: "second", normalize: "none" },
      },
      {
        actor: "operator",
        action: "list.values",
        target: "list:audited",
        before: null,
        after: { added: 2, removed: 0, valueCount: 2, add: ["a", "b"], remove: ["c"] },
      },
      {
        actor: "operator",
        action: "list.delete",
        target: "list:audited",
        before: { description: "second", normalize: "none", valueCount: 2 },
        after: null,
      },
    ]);
  });
});

describe("lists in workflows", () => {
  it("refuses a version naming a list the tenant does not have, another tenant's included (400 naming it)", async () => {
    const owner = await createPartner(h.app);
    const other = await createPartner(h.app);
    await makeList(owner.tenantId, "blocked_ibans");
    const refused = await admin(
      "POST",
      `/admin/tenants/${other.tenantId}/workflows/payments/versions`,
      blockScreen,
    );
    expect(refused.statusCode).toBe(400);
    expect(refused.json().code).toBe("invalid_request");
    expect(refused.json().error).toContain("blocked_ibans");
    expect(refused.json().details).toEqual([
      { path: "nodes[0].rules[0].when", message: expect.stringContaining('"blocked_ibans"') },
    ]);
    await createWorkflow(h.app, owner.tenantId, "payments", blockScreen);
  });

  it("applies a change of a list to the cases that come after it, normalised on lookup", async () => {
    const partner = await createPartner(h.app);
    await makeList(partner.tenantId, "blocked_ibans", { normalize: "iban" });
    await createWorkflow(h.app, partner.tenantId, "payments", blockScreen);
    const before = await decide(partner, "fr76 3000 6000 0112 3456 7890 189");
    expect(before.result.decision.value).toBe("approved");
    await change(partner.tenantId, "blocked_ibans", { add: ["FR7630006000011234567890189"] });
    const after = await decide(partner, "fr76 3000 6000 0112 3456 7890 189");
    expect(after.result.decision.value).toBe("declined");
    const trace = (await admin("GET", `/admin/cases/${after.caseId}`)).json().trace;
    expect(trace[0].lists).toEqual([
      { list: "blocked_ibans", value: "fr76 3000 6000 0112 3456 7890 189", found: true },
    ]);
    expect((await decide(partner, "FR76 3000 6000 0112 3456 7890 188")).result.decision.value).toBe(
      "approved",
    );
    await change(partner.tenantId, "blocked_ibans", { remove: ["FR7630006000011234567890189"] });
    expect((await decide(partner, "FR7630006000011234567890189")).result.decision.value).toBe("approved");
  });

  it("refuses to delete a list a published version reads (409 list_in_use naming it), not one only a draft reads", async () => {
    const partner = await createPartner(h.app);
    await makeList(partner.tenantId, "blocked_ibans");
    await makeList(partner.tenantId, "draft_only");
    await createWorkflow(h.app, partner.tenantId, "payments", blockScreen);
    const draft = JSON.parse(JSON.stringify(blockScreen).replace("blocked_ibans", "draft_only"));
    await createWorkflow(h.app, partner.tenantId, "drafts", draft, { publish: false });
    const refused = await admin("DELETE", listUrl(partner.tenantId, "blocked_ibans"));
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({
      code: "list_in_use",
      details: [{ path: "", message: "read by payments v1" }],
    });
    expect(refused.json().error).toContain("payments v1");
    expect((await admin("DELETE", listUrl(partner.tenantId, "draft_only"))).statusCode).toBe(204);
    const lists = (await admin("GET", `/admin/tenants/${partner.tenantId}/lists`)).json().lists;
    expect(lists.map((l: { listId: string }) => l.listId)).toEqual(["blocked_ibans"]);
  });

  it("answers inList through the list source for many probes in one call, undefined for an unknown list", async () => {
    const tenantId = await createTenant(h.app);
    await makeList(tenantId, "emails", { normalize: "email" });
    await makeList(tenantId, "raw");
    await change(tenantId, "emails", { add: ["ada@example.com"] });
    await change(tenantId, "raw", { add: ["ADA@example.com"] });
    const answers = await h.ctx.lists?.contains(h.ctx.db.root, tenantId, [
      { list: "emails", value: " ADA@Example.com " },
      { list: "raw", value: "ada@example.com" },
      { list: "raw", value: "ADA@example.com" },
      { list: "nope", value: "x" },
      { list: "emails", value: "bob@example.com" },
    ]);
    expect(answers).toEqual([true, false, true, undefined, false]);
    expect(await h.ctx.lists?.unknown(h.ctx.db.root, tenantId, ["emails", "nope", "raw"])).toEqual(["nope"]);
  });
});

describe("cds list", () => {
  it("creates a list, adds a file of values, pages them, lists, removes and deletes, each through the operator API", async () => {
    const tenantId = await createTenant(h.app);
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "cds-list-")), "ibans.txt");
    fs.writeFileSync(
      file,
      "de89 3704 0044 0532 0130 00\r\nGB82WEST12345698765432\n\n  \nNL91ABNA0417164300\n",
    );
    const set = await runCds(
      url,
      "list",
      "set",
      "--tenant",
      tenantId,
      "--list",
      "blocked_ibans",
      "--normalize",
      "iban",
    );
    expect(set.code, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({ listId: "blocked_ibans", normalize: "iban" });
    const added = await runCds(
      url,
      "list",
      "add",
      "--tenant",
      tenantId,
      "--list",
      "blocked_ibans",
      "--file",
      file,
      "FR7630006000011234567890189",
    );
    expect(added.code, added.stderr).toBe(0);
    expect(JSON.parse(added.stdout)).toEqual({ valueCount: 4 });
    const page = await runCds(
      url,
      "list",
      "values",
      "--tenant",
      tenantId,
      "--list",
      "blocked_ibans",
      "--prefix",
      "gb",
      "--limit",
      "5",
    );
    expect(JSON.parse(page.stdout)).toEqual({ values: ["GB82WEST12345698765432"], nextCursor: null });
    const removed = await runCds(
      url,
      "list",
      "remove",
      "--tenant",
      tenantId,
      "--list",
      "blocked_ibans",
      "NL91ABNA0417164300",
    );
    expect(JSON.parse(removed.stdout)).toEqual({ valueCount: 3 });
    const ls = await runCds(url, "list", "ls", "--tenant", tenantId);
    expect(JSON.parse(ls.stdout).lists).toEqual([
      expect.objectContaining({ listId: "blocked_ibans", valueCount: 3 }),
    ]);
    const deleted = await runCds(url, "list", "delete", "--tenant", tenantId, "--list", "blocked_ibans");
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stderr).toContain("deleted list blocked_ibans");
    expect((await admin("GET", `/admin/tenants/${tenantId}/lists`)).json().lists).toEqual([]);
  });
});
