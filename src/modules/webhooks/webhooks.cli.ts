import type { Command } from "commander";
import {
  type CliContext,
  deleteCommand,
  listCommand,
  positiveInt,
  withQuery,
} from "../../platform/cli/context.js";

interface SecretArg {
  id?: string;
  secret?: string;
}

function collectSecret(value: string, previous: SecretArg[] = []): SecretArg[] {
  if (value.startsWith("=")) return [...previous, { secret: value.slice(1) }];
  const eq = value.indexOf("=");
  if (eq <= 0) throw new Error(`expected <id>=<secret> (or =<secret> for a single secret without id)`);
  return [...previous, { id: value.slice(0, eq), secret: value.slice(eq + 1) }];
}

function collectKept(value: string, previous: SecretArg[] = []): SecretArg[] {
  return [...previous, { id: value }];
}

const t = (tenant: string) => `/admin/tenants/${encodeURIComponent(tenant)}`;

export function webhooksCli(program: Command, cli: CliContext): void {
  const webhook = program.command("webhook").description("a tenant's webhook configurations");
  webhook
    .command("set")
    .description("create or replace a webhook configuration")
    .requiredOption("--tenant <tenantId>", "the tenant")
    .option("--key <webhookKey>", "the configuration: default, or a name events refer to", "default")
    .requiredOption("--endpoint <url>", "the URL events are POSTed to")
    .option(
      "--secret <id=secret>",
      "a signing secret of the rotation set (repeatable); =<secret> for a single secret without id",
      collectSecret,
    )
    .option("--keep-secret <id>", "keep the secret stored under this id (repeatable)", collectKept)
    .option("--active-secret <id>", "the secret that signs new attempts")
    .option("--max-attempts <n>", "attempts before a delivery fails (default 5)", positiveInt)
    .option("--timeout-ms <ms>", "deadline of one attempt (default 10000)", positiveInt)
    .action(
      async (opts: {
        tenant: string;
        key: string;
        endpoint: string;
        secret?: SecretArg[];
        keepSecret?: SecretArg[];
        activeSecret?: string;
        maxAttempts?: number;
        timeoutMs?: number;
      }) => {
        const secrets = [...(opts.keepSecret ?? []), ...(opts.secret ?? [])];
        if (secrets.length === 0) throw new Error("give at least one --secret or --keep-secret");
        const only = secrets.length === 1 ? secrets[0] : undefined;
        cli.print(
          await cli.client().request("PUT", `${t(opts.tenant)}/webhooks/${encodeURIComponent(opts.key)}`, {
            url: opts.endpoint,
            secrets,
            ...(opts.activeSecret
              ? { activeSecretId: opts.activeSecret }
              : only?.id
                ? { activeSecretId: only.id }
                : {}),
            ...(opts.maxAttempts === undefined ? {} : { maxAttempts: opts.maxAttempts }),
            ...(opts.timeoutMs === undefined ? {} : { timeoutMs: opts.timeoutMs }),
          }),
        );
      },
    );
  listCommand(webhook, cli, "webhooks", "list a tenant's webhook configurations (never the secret values)");
  deleteCommand(webhook, cli, "webhooks", ["--key <webhookKey>", "the configuration"], {
    description: "delete a webhook configuration",
    done: (id) => `deleted webhook configuration ${id}`,
  });

  const delivery = program.command("delivery").description("the webhook delivery log and redelivery");
  delivery
    .command("list")
    .description("a tenant's deliveries, newest first, with every attempt")
    .requiredOption("--tenant <tenantId>", "the tenant")
    .option("--status <status>", "pending, succeeded or failed")
    .option("--event-type <type>", "e.g. case.decided")
    .option("--case <caseId>", "deliveries of one case")
    .option("--key <webhookKey>", "deliveries to one configuration")
    .option("--limit <n>", "page size, 1 to 100 (default 25)", positiveInt)
    .option("--cursor <cursor>", "the nextCursor of the previous page")
    .action(
      async (opts: {
        tenant: string;
        status?: string;
        eventType?: string;
        case?: string;
        key?: string;
        limit?: number;
        cursor?: string;
      }) => {
        const { status, eventType, limit, cursor } = opts;
        const query = { status, eventType, caseId: opts.case, webhookKey: opts.key, limit, cursor };
        cli.print(
          await cli.client().request("GET", withQuery(`${t(opts.tenant)}/webhook-deliveries`, query)),
        );
      },
    );
  delivery
    .command("show")
    .description("one delivery with its attempts and the exact body sent")
    .argument("<deliveryId>")
    .action(async (deliveryId: string) => {
      cli.print(
        await cli.client().request("GET", `/admin/webhook-deliveries/${encodeURIComponent(deliveryId)}`),
      );
    });
  delivery
    .command("redeliver")
    .description("send a delivery's event again, with a fresh webhookId")
    .argument("<deliveryId>")
    .action(async (deliveryId: string) => {
      cli.print(
        await cli
          .client()
          .request("POST", `/admin/webhook-deliveries/${encodeURIComponent(deliveryId)}/redeliver`),
      );
    });
  delivery
    .command("redeliver-failed")
    .description("redeliver every failed delivery of a tenant created since a time")
    .requiredOption("--tenant <tenantId>", "the tenant")
    .requiredOption("--since <timestamp>", "RFC 3339, e.g. 2025-01-31T09:00:00Z")
    .option("--until <timestamp>", "RFC 3339; default now")
    .option("--event-type <type>", "only this event type")
    .option("--key <webhookKey>", "only deliveries to this configuration")
    .action(
      async (opts: { tenant: string; since: string; until?: string; eventType?: string; key?: string }) => {
        cli.print(
          await cli.client().request("POST", `${t(opts.tenant)}/webhook-deliveries/redeliver-failed`, {
            since: opts.since,
            ...(opts.until ? { until: opts.until } : {}),
            ...(opts.eventType ? { eventType: opts.eventType } : {}),
            ...(opts.key ? { webhookKey: opts.key } : {}),
          }),
        );
      },
    );
}
