import type { Command } from "commander";
import type { CliContext } from "../../platform/cli/context.js";

export function tenantsCli(program: Command, cli: CliContext): void {
  const tenant = program.command("tenant").description("tenants");
  tenant
    .command("create")
    .description("create a tenant")
    .requiredOption("--name <name>", "the tenant's name")
    .action(async (opts: { name: string }) => {
      cli.print(await cli.client().request("POST", "/admin/tenants", { name: opts.name }));
    });
  tenant
    .command("list")
    .description("list tenants")
    .action(async () => {
      cli.print(await cli.client().request("GET", "/admin/tenants"));
    });
}
