import type { Command } from "commander";
import {
  type CliContext,
  callCommand,
  commandOf,
  TENANT_OPTION,
  tenantPath,
} from "../../platform/cli/context.js";

export function tagsCli(program: Command, cli: CliContext): void {
  const option = program.command("tag-option").description("a tenant's tag vocabulary");
  commandOf(option, "set", "add a tag option, or enable or disable one", [
    TENANT_OPTION,
    ["--tag <tag>", "the tag (up to 64 characters)"],
  ])
    .option("--disabled", "disable the option: no new uses, existing tags stay")
    .action(async (opts: { tenant: string; tag: string; disabled?: boolean }) => {
      const path = tenantPath(opts.tenant, "tag-options", opts.tag);
      cli.print(await cli.client().request("PUT", path, { enabled: !opts.disabled }));
    });
  callCommand(option, cli, {
    name: "list",
    description: "list a tenant's tag options",
    options: [TENANT_OPTION],
    path: (o: { tenant: string }) => tenantPath(o.tenant, "tag-options"),
  });
}
