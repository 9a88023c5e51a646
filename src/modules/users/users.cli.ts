import type { Command } from "commander";
import type { CliContext } from "../../platform/cli/context.js";
import { ROLES } from "./roles.js";

export function usersCli(program: Command, cli: CliContext): void {
  const user = program.command("user").description("console users (a tenant's analysts and admins)");
  const tenantPath = (tenant: string) => `/admin/tenants/${encodeURIComponent(tenant)}/users`;
  user
    .command("create")
    .description("create a console user; prints the one-time setup link")
    .requiredOption("--tenant <tenantId>", "the tenant")
    .requiredOption("--email <email>", "the sign-in email")
    .requiredOption("--name <name>", "the user's name")
    .requiredOption("--role <role>", ROLES.join(", "))
    .action(async (opts: { tenant: string; email: string; name: string; role: string }) => {
      cli.print(
        await cli
          .client()
          .request("POST", tenantPath(opts.tenant), { email: opts.email, name: opts.name, role: opts.role }),
      );
      cli.note("Send the setupUrl to the user: it is shown this once and works once, for 7 days.");
    });
  user
    .command("list")
    .description("list a tenant's console users")
    .requiredOption("--tenant <tenantId>", "the tenant")
    .action(async (opts: { tenant: string }) => {
      cli.print(await cli.client().request("GET", tenantPath(opts.tenant)));
    });
  user
    .command("delete")
    .description("delete a console user; their sessions end at once")
    .requiredOption("--tenant <tenantId>", "the tenant")
    .requiredOption("--user <userId>", "the userId")
    .action(async (opts: { tenant: string; user: string }) => {
      await cli.client().request("DELETE", `${tenantPath(opts.tenant)}/${encodeURIComponent(opts.user)}`);
      cli.note(`deleted ${opts.user}`);
    });
}
