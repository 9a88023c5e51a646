import { type Command, InvalidArgumentError } from "commander";
import { type CliContext, deleteCommand, list, listCommand } from "../../platform/cli/context.js";
import { SCOPES } from "./scopes.js";

// Commander replaces an option value of null with "", so "unlimited" stays a word until the body is built.
function rateLimit(value: string): { perSecond: number; burst: number } | "unlimited" {
  if (value === "unlimited") return value;
  const match = /^(\d+(?:\.\d+)?)(?::(\d+))?$/.exec(value);
  if (!match) throw new InvalidArgumentError(`expected <perSecond>[:<burst>] or "unlimited", got "${value}"`);
  const perSecond = Number(match[1]);
  return { perSecond, burst: match[2] ? Number(match[2]) : Math.max(1, Math.ceil(perSecond * 2)) };
}

export function apiKeysCli(program: Command, cli: CliContext): void {
  const key = program.command("key").description("partner API keys");
  key
    .command("create")
    .description("create an API key; its value is printed this once")
    .requiredOption("--tenant <tenantId>", "the tenant")
    .requiredOption("--scopes <scopes>", `comma-separated: ${SCOPES.join(", ")}`, list)
    .option("--name <name>", "a name to recognise the key by", "default")
    .option("--expires-at <timestamp>", "RFC 3339 expiry")
    .option("--rate-limit <limit>", 'requests/s and burst, "100:200", or "unlimited"', rateLimit)
    .action(
      async (opts: {
        tenant: string;
        scopes: string[];
        name: string;
        expiresAt?: string;
        rateLimit?: { perSecond: number; burst: number } | "unlimited";
      }) => {
        const created = await cli
          .client()
          .request("POST", `/admin/tenants/${encodeURIComponent(opts.tenant)}/api-keys`, {
            name: opts.name,
            scopes: opts.scopes,
            ...(opts.expiresAt ? { expiresAt: opts.expiresAt } : {}),
            ...(opts.rateLimit !== undefined
              ? { rateLimit: opts.rateLimit === "unlimited" ? null : opts.rateLimit }
              : {}),
          });
        cli.print(created);
        cli.note("Store the key now: it is shown this once and cannot be recovered.");
      },
    );
  listCommand(key, cli, "api-keys", "list a tenant's keys (never their values)");
  deleteCommand(key, cli, "api-keys", ["--key <keyId>", "the keyId"], {
    description: "delete a key; it stops working on the next request",
    done: (id) => `deleted ${id}`,
  });
}
