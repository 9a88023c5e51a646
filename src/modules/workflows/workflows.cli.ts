import fs from "node:fs";
import type { Command } from "commander";
import {
  type CliContext,
  callCommand,
  positiveInt,
  type RequiredOption,
  TENANT_OPTION,
} from "../../platform/cli/context.js";
import { workflowDefinitionSchema } from "./workflow.schema.js";

function readDefinition(file: string): unknown {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    throw new Error(`cannot read ${file}: ${(err as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(`${file} is not valid JSON: ${(err as Error).message}`);
  }
}

const WORKFLOW_OPTION: RequiredOption = ["--workflow <workflowId>", "the workflow"];
const VERSION_OPTION: RequiredOption = ["--version <n>", "the version", positiveInt];
const base = (tenant: string) => `/admin/tenants/${encodeURIComponent(tenant)}/workflows`;
const versionPath = (o: { tenant: string; workflow: string; version: number }) =>
  `${base(o.tenant)}/${encodeURIComponent(o.workflow)}/versions/${o.version}`;

export function workflowsCli(program: Command, cli: CliContext): void {
  const workflow = program.command("workflow").description("a tenant's workflows and their versions");
  workflow
    .command("create")
    .description("create the next version of a workflow from a definition file")
    .requiredOption("--tenant <tenantId>", "the tenant")
    .requiredOption("--workflow <workflowId>", "the workflow, e.g. kyc-standard")
    .requiredOption("--file <path>", "the definition, a JSON file")
    .action(async (opts: { tenant: string; workflow: string; file: string }) => {
      const definition = readDefinition(opts.file);
      const created = await cli
        .client()
        .request<{ version: number }>(
          "POST",
          `${base(opts.tenant)}/${encodeURIComponent(opts.workflow)}/versions`,
          definition,
        );
      cli.print(created);
      cli.note(
        `Created version ${created.version}; new cases use it once published: cds workflow publish ` +
          `--tenant ${opts.tenant} --workflow ${opts.workflow} --version ${created.version}`,
      );
    });
  workflow
    .command("publish")
    .description("publish a version and make it the one new cases use")
    .requiredOption("--tenant <tenantId>", "the tenant")
    .requiredOption("--workflow <workflowId>", "the workflow")
    .requiredOption("--version <n>", "the version", positiveInt)
    .action(async (opts: { tenant: string; workflow: string; version: number }) => {
      cli.print(await cli.client().request("POST", `${versionPath(opts)}/publish`));
    });
  callCommand(workflow, cli, {
    name: "list",
    description: "list a tenant's workflows with their versions",
    options: [TENANT_OPTION],
    path: (o: { tenant: string }) => base(o.tenant),
  });
  callCommand(workflow, cli, {
    name: "show",
    description: "show a version with its definition",
    options: [TENANT_OPTION, WORKFLOW_OPTION, VERSION_OPTION],
    path: versionPath,
  });
  workflow
    .command("schema")
    .description("print the JSON Schema of workflow definitions (for editors and CI checks)")
    .action(() => {
      cli.print(workflowDefinitionSchema(cli.nodeTypes));
    });
}
