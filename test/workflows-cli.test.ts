import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nodeTypesOf } from "../src/context.js";
import { featureModules } from "../src/modules/index.js";
import { workflowDefinitionSchema } from "../src/modules/workflows/workflow.schema.js";
import { createTestApp, type TestApp } from "./support/app.js";
import { runCds } from "./support/cli.js";
import { createTenant } from "./support/fixtures.js";

let h: TestApp;
let url: string;
let dir: string;
beforeAll(async () => {
  h = await createTestApp();
  url = await h.app.listen({ port: 0, host: "127.0.0.1" });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "cds-workflow-cli-"));
});
afterAll(async () => {
  await h.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const cds = (...argv: string[]) => runCds(url, ...argv);

function writeDefinition(name: string, definition: unknown): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, typeof definition === "string" ? definition : JSON.stringify(definition));
  return file;
}

const definition = {
  inputSchema: { type: "object" },
  start: "screen",
  nodes: [
    {
      id: "screen",
      type: "rules",
      rules: [{ when: "payload.amount > 1000", next: "review" }],
      default: "approve",
    },
    { id: "review", type: "decision", decision: "in_review" },
    { id: "approve", type: "decision", decision: "approved" },
  ],
};

describe("cds workflow", () => {
  it("creates, publishes, lists and shows versions through the operator API", async () => {
    const tenantId = await createTenant(h.app);
    const file = writeDefinition("screen.json", definition);

    const created = await cds(
      "workflow",
      "create",
      "--tenant",
      tenantId,
      "--workflow",
      "tx-screen",
      "--file",
      file,
    );
    expect(created.code, created.stderr).toBe(0);
    expect(JSON.parse(created.stdout)).toEqual({
      workflowId: "tx-screen",
      version: 1,
      createdAt: expect.any(String),
    });
    expect(created.stderr).toMatch(/cds workflow publish --tenant \S+ --workflow tx-screen --version 1/);
    expect(
      JSON.parse(
        (await cds("workflow", "create", "--tenant", tenantId, "--workflow", "tx-screen", "--file", file))
          .stdout,
      ).version,
    ).toBe(2);

    const published = await cds(
      "workflow",
      "publish",
      "--tenant",
      tenantId,
      "--workflow",
      "tx-screen",
      "--version",
      "2",
    );
    expect(published.code, published.stderr).toBe(0);
    expect(JSON.parse(published.stdout)).toEqual({
      workflowId: "tx-screen",
      version: 2,
      publishedAt: expect.any(String),
      current: true,
    });

    const listed = await cds("workflow", "list", "--tenant", tenantId);
    expect(listed.code).toBe(0);
    const { workflows } = JSON.parse(listed.stdout);
    expect(workflows).toHaveLength(1);
    expect(workflows[0]).toMatchObject({ workflowId: "tx-screen", currentVersion: 2 });
    expect(workflows[0].versions.map((v: { version: number }) => v.version)).toEqual([1, 2]);

    const shown = await cds(
      "workflow",
      "show",
      "--tenant",
      tenantId,
      "--workflow",
      "tx-screen",
      "--version",
      "2",
    );
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({
      workflowId: "tx-screen",
      version: 2,
      current: true,
      definition,
    });
  });

  it("prints every problem of a refused definition and exits 1", async () => {
    const tenantId = await createTenant(h.app);
    const file = writeDefinition("broken.json", {
      ...definition,
      start: "nowhere",
      nodes: [...definition.nodes, { id: "x", type: "nope" }],
    });
    const res = await cds("workflow", "create", "--tenant", tenantId, "--workflow", "broken", "--file", file);
    expect(res.code).toBe(1);
    expect(res.stdout).toBe("");
    expect(res.stderr).toMatch(/^error: HTTP 400: the workflow definition has 2 problems/);
    expect(res.stderr).toContain('  start: refers to unknown node "nowhere"\n');
    expect(res.stderr).toContain('  nodes[3].type: unknown node type "nope"');
  });

  it("says so when the file is missing or not JSON, without calling the service", async () => {
    const tenantId = await createTenant(h.app);
    const missing = await cds(
      "workflow",
      "create",
      "--tenant",
      tenantId,
      "--workflow",
      "w",
      "--file",
      path.join(dir, "none.json"),
    );
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^error: cannot read .*none\.json/);
    const garbled = await cds(
      "workflow",
      "create",
      "--tenant",
      tenantId,
      "--workflow",
      "w",
      "--file",
      writeDefinition("bad.json", "{nodes:"),
    );
    expect(garbled.code).toBe(1);
    expect(garbled.stderr).toMatch(/^error: .*bad\.json is not valid JSON/);
    expect(JSON.parse((await cds("workflow", "list", "--tenant", tenantId)).stdout)).toEqual({
      workflows: [],
    });
  });

  it("reports an unknown version or tenant, and refuses a version that is not a positive integer", async () => {
    const tenantId = await createTenant(h.app);
    const unknown = await cds(
      "workflow",
      "publish",
      "--tenant",
      tenantId,
      "--workflow",
      "w",
      "--version",
      "3",
    );
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe("error: HTTP 404: version 3 of workflow w not found\n");
    const noTenant = await cds("workflow", "list", "--tenant", "00000000-0000-4000-8000-000000000000");
    expect(noTenant.stderr).toBe("error: HTTP 404: tenant not found\n");
    const bad = await cds("workflow", "show", "--tenant", tenantId, "--workflow", "w", "--version", "two");
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/expected a positive integer/);
  });

  it("refuses to run with a wrong operator token", async () => {
    const tenantId = await createTenant(h.app);
    const res = await cds("--token", "wrong-token-0123456789", "workflow", "list", "--tenant", tenantId);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/^error: HTTP 401/);
  });
});

describe("the JSON Schema of the language", () => {
  it("is printed by cds workflow schema and published as docs/workflow-definition.schema.json", async () => {
    const res = await cds("workflow", "schema");
    expect(res.code).toBe(0);
    expect(JSON.parse(res.stdout)).toEqual(workflowDefinitionSchema(nodeTypesOf(featureModules)));
    const published = fs.readFileSync(
      new URL("../docs/workflow-definition.schema.json", import.meta.url),
      "utf8",
    );
    // Regenerate with: npx tsx src/main.ts workflow schema > docs/workflow-definition.schema.json
    expect(JSON.parse(published)).toEqual(workflowDefinitionSchema(nodeTypesOf(featureModules)));
  });
});
