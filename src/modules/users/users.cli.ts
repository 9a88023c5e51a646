import type { Command } from "commander";
import { type CliContext, callCommand, TENANT_OPTION, tenantPath } from "../../platform/cli/context.js";
import { ROLES } from "./roles.js";

export function usersCli(program: Command, cli: CliContext): void {
  const user = program.command("user").description("console users (a tenant's analysts and admins)");
  user
    .command("create")
    .description("create a console user; prints the one-time setup link")
    .requiredOption("--tenant <tenantId>", "the tenant")
    .requiredOption("--email <email>", "the sign-in email")
    .requiredOption("--name <name>", "the user's name")
    .requiredOption("--role <role>", ROLES.join(", "))
    .action(async (opts: { tenant: string; email: string; name: string; role: string }) => {
      cli.print(
        await cli.client().request("POST", tenantPath(opts.tenant, "users"), {
          email: opts.email,
          name: opts.name,
          role: opts.role,
        }),
      );
      cli.note("Send the setupUrl to the user: it is shown this once and works once, for 7 days.");
    });
  callCommand(user, cli, {
    name: "list",
    description: "list a tenant's console users",
    options: [TENANT_OPTION],
    path: (o: { tenant: string }) => tenantPath(o.tenant, "users"),
  });
  callCommand(user, cli, {
    name: "delete",
    description: "delete a console user; their sessions end at once",
    options: [TENANT_OPTION, ["--user <userId>", "the userId"]],
    method: "DELETE",
    path: (o: { tenant: string; user: string }) => tenantPath(o.tenant, "users", o.user),
    done: (o) => `deleted ${o.user}`,
  });
}
