import { readFileSync } from "node:fs";
import { type Command, Option } from "commander";
import { type CliContext, positiveInt } from "../../cli/context.js";
import { DECISION_VALUES } from "./case-status.js";

export function casesCli(program: Command, cli: CliContext): void {
  const kase = program.command("case").description("cases: analyst decisions and dry runs");
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
    .description("run a case submission (JSON file, without workflowId) on a workflow version")
    .requiredOption("--tenant <tenantId>", "the tenant")
    .requiredOption("--workflow <workflowId>", "the workflow")
    .requiredOption("--version <n>", "the version, published or not", positiveInt)
    .requiredOption("--file <path>", "the case submission as JSON")
    .action(async (opts: { tenant: string; workflow: string; version: number; file: string }) => {
      const body = JSON.parse(readFileSync(opts.file, "utf8")) as Record<string, unknown>;
      const { workflowId: _w, workflowVersion: _v, ...submission } = body;
      cli.print(
        await cli
          .client()
          .request(
            "POST",
            `/admin/tenants/${encodeURIComponent(opts.tenant)}/workflows/${encodeURIComponent(opts.workflow)}/versions/${opts.version}/dry-run`,
            submission,
          ),
      );
    });
}
