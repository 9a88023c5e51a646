import type { Command } from "commander";
import {
  type CliContext,
  callCommand,
  commandOf,
  positiveInt,
  TENANT_OPTION,
  tenantPath,
  withQuery,
} from "../../platform/cli/context.js";

/** `cds entity`: find an entity, show it with its linked entities, list its cases. */
export function entitiesCli(program: Command, cli: CliContext): void {
  const entity = program
    .command("entity")
    .description("what the tenant knows across cases: customers, IBANs, devices…");
  commandOf(entity, "find", "find the tenant's entity of a type and value (the value is normalised first)", [
    TENANT_OPTION,
    ["--type <type>", "customer, email, phone, iban, device_id, …"],
    ["--value <value>", "the value"],
  ]).action(async (opts: { tenant: string; type: string; value: string }) => {
    const path = withQuery(tenantPath(opts.tenant, "entities"), { type: opts.type, value: opts.value });
    cli.print(await cli.client().request("GET", path));
  });
  const ENTITY = ["--entity <entityId>", "the entity"] as const;
  callCommand(entity, cli, {
    name: "show",
    description: "show an entity with the entities it shares cases with",
    options: [TENANT_OPTION, ENTITY],
    path: (o: { tenant: string; entity: string }) => tenantPath(o.tenant, "entities", o.entity),
  });
  commandOf(entity, "cases", "list an entity's cases, newest first", [TENANT_OPTION, ENTITY])
    .option("--limit <n>", "cases per page (up to 200)", positiveInt)
    .option("--cursor <cursor>", "the nextCursor of the previous page")
    .action(async (opts: { tenant: string; entity: string; limit?: number; cursor?: string }) => {
      const { limit, cursor } = opts;
      const path = withQuery(tenantPath(opts.tenant, "entities", opts.entity, "cases"), { limit, cursor });
      cli.print(await cli.client().request("GET", path));
    });
}
