import { readFileSync } from "node:fs";
import { type Command, Option } from "commander";
import { type CliContext, positiveInt } from "../../platform/cli/context.js";
import { CASE_STATUSES, CASE_TYPES, DECISION_VALUES } from "../case-model/index.js";
import { describeTrace, type TraceEntry } from "../workflows/index.js";

interface AdminCase {
  caseId: string;
  tenantId: string;
  status: string;
  type: string;
  workflowId: string;
  workflowVersion: number;
  dryRun: boolean;
  result: { decision: { value: string; source: string; actor: string } | null };
  error: { nodeId?: string; message?: string } | null;
  trace: TraceEntry[];
}

/** The path a case took, in words: each node and why it went where it went, then the outcome. */
async function describeCase(cli: CliContext, record: AdminCase): Promise<string[]> {
  const version = await cli
    .client()
    .request<{ definition: Record<string, unknown> }>(
      "GET",
      `/admin/tenants/${encodeURIComponent(record.tenantId)}/workflows/${encodeURIComponent(record.workflowId)}/versions/${record.workflowVersion}`,
    )
    .catch(() => undefined);
  const lines = [
    `Case ${record.caseId}${record.dryRun ? " (dry run)" : ""}: ${record.type}, tenant ${record.tenantId}`,
    `Workflow ${record.workflowId} version ${record.workflowVersion}`,
    "",
    ...describeTrace(cli.nodeTypes, record.trace, version?.definition),
    "",
  ];
  const decision = record.result.decision;
  if (record.status === "failed") lines.push(`Failed: ${record.error?.message ?? "no error recorded"}`);
  else if (decision)
    lines.push(
      `Decision: ${decision.value} (${decision.source}, ${decision.actor}); status ${record.status}`,
    );
  else lines.push(`Status: ${record.status}`);
  return lines;
}

/** Prints a case record as JSON, or the path it took in words. */
async function printCase(cli: CliContext, record: AdminCase, json: boolean | undefined): Promise<void> {
  if (json) cli.print(record);
  else cli.write(await describeCase(cli, record));
}

export function casesCli(program: Command, cli: CliContext): void {
  const kase = program.command("case").description("cases: reading them, analyst decisions and dry runs");
  kase
    .command("override")
    .description("override a case's decision")
    .requiredOption("--case <caseId>", "the case")
    .addOption(
      new Option("--decision <value>", "the new decision").choices(DECISION_VALUES).makeOptionMandatory(),
    )
    .requiredOption("--actor <userId>", "the analyst")
    .option("--reason <text>", "why")
    .action(async (opts: { case: string; decision: string; actor: string; reason?: string }) => {
      cli.print(
        await cli.client().request("POST", `/admin/cases/${encodeURIComponent(opts.case)}/decision`, {
          value: opts.decision,
          actor: opts.actor,
          ...(opts.reason ? { reason: opts.reason } : {}),
        }),
      );
    });
  kase
    .command("close")
    .description("close a case for good")
    .requiredOption("--case <caseId>", "the case")
    .requiredOption("--actor <userId>", "the analyst")
    .action(async (opts: { case: string; actor: string }) => {
      cli.print(
        await cli
          .client()
          .request("POST", `/admin/cases/${encodeURIComponent(opts.case)}/close`, { actor: opts.actor }),
      );
    });
  kase
    .command("dry-run")
    .description("run a case submission (JSON file) on a workflow version, wait for it, and print its trace")
    .requiredOption("--tenant <tenantId>", "the tenant")
    .requiredOption("--workflow <workflowId>", "the workflow")
    .requiredOption("--version <n>", "the version, published or not", positiveInt)
    .requiredOption(
      "--file <path>",
      "the case submission as JSON (its workflowId and workflowVersion are ignored)",
    )
    .option("--json", "print the case record as JSON instead of in words")
    .action(
      async (opts: { tenant: string; workflow: string; version: number; file: string; json?: boolean }) => {
        const submission = JSON.parse(readFileSync(opts.file, "utf8")) as Record<string, unknown>;
        const record = await cli
          .client()
          .request<AdminCase>(
            "POST",
            `/admin/tenants/${encodeURIComponent(opts.tenant)}/workflows/${encodeURIComponent(opts.workflow)}/versions/${opts.version}/dry-run?wait=true`,
            submission,
          );
        await printCase(cli, record, opts.json);
      },
    );
  kase
    .command("show")
    .description("show a case and the path it took: which rule held, each score rule's points, the decision")
    .requiredOption("--case <caseId>", "the case")
    .option("--json", "print the case record (with its trace) as JSON instead of in words")
    .action(async (opts: { case: string; json?: boolean }) => {
      const record = await cli
        .client()
        .request<AdminCase>("GET", `/admin/cases/${encodeURIComponent(opts.case)}`);
      await printCase(cli, record, opts.json);
    });
  kase
    .command("list")
    .description("list cases across tenants, or one tenant's, newest first")
    .option("--tenant <tenantId>", "only this tenant's cases")
    .option("--status <status>", CASE_STATUSES.join(" | "))
    .option("--type <type>", CASE_TYPES.join(" | "))
    .option("--workflow <workflowId>", "only cases of this workflow")
    .option("--decision <value>", DECISION_VALUES.join(" | "))
    .option("--tag <tag>", "only cases carrying this tag")
    .option("--customer <externalCustomerId>", "only this customer's cases")
    .option("--from <time>", "created at or after (RFC 3339)")
    .option("--to <time>", "created before (RFC 3339)")
    .option("--dry-run", "only dry-run cases")
    .option("--limit <n>", "cases per page (1-100)", positiveInt)
    .option("--cursor <cursor>", "the nextCursor of the previous page")
    .action(async (opts: Record<string, string | number | boolean | undefined>) => {
      const names: Record<string, string> = {
        tenant: "tenantId",
        status: "status",
        type: "type",
        workflow: "workflowId",
        decision: "decision",
        tag: "tag",
        customer: "externalCustomerId",
        from: "createdFrom",
        to: "createdTo",
        dryRun: "dryRun",
        limit: "limit",
        cursor: "cursor",
      };
      const query = new URLSearchParams();
      for (const [option, param] of Object.entries(names)) {
        const value = opts[option];
        if (value !== undefined && value !== false) query.set(param, String(value));
      }
      const suffix = query.size > 0 ? `?${query}` : "";
      cli.print(await cli.client().request("GET", `/admin/cases${suffix}`));
    });
}
