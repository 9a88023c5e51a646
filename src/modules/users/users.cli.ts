import type { Command } from "commander";
import { type CliContext, deleteCommand, listCommand, tenantPath } from "../../platform/cli/context.js";
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
  listCommand(user, cli, "users", "list a tenant's console users");
  deleteCommand(user, cli, "users", ["--user <userId>", "the userId"], {
    description: "delete a console user; their sessions end at once",
    done: (id) => `deleted ${id}`,
  });
}
