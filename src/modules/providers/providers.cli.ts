import type { Command } from "commander";
import { type CliContext, deleteCommand, listCommand, positiveInt } from "../../platform/cli/context.js";
import {
  OPENSANCTIONS_SIMULATOR_DEFAULTS,
  OpenSanctionsSimulator,
} from "./brokers/opensanctions/opensanctions.simulator.js";
import { SUMSUB_SIMULATOR_DEFAULTS, SumsubSimulator } from "./brokers/sumsub/sumsub.simulator.js";
import type { RunningSimulator } from "./simulator.js";

function collectCredential(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const eq = value.indexOf("=");
  if (eq <= 0) throw new Error("expected <name>=<value>, e.g. appToken=…");
  return { ...previous, [value.slice(0, eq)]: value.slice(eq + 1) };
}

const t = (tenant: string) => `/admin/tenants/${encodeURIComponent(tenant)}`;

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new Error(`expected a port from 0 to 65535, got "${value}"`);
  return n;
}

/** A `simulate` subcommand: a vendor simulator listening on `--host` and `--port` (`defaultPort`). */
function simulator(simulate: Command, name: string, description: string, defaultPort: number): Command {
  return simulate
    .command(name)
    .description(description)
    .option("--port <port>", "listen port (0 picks a free one)", port, defaultPort)
    .option("--host <host>", "listen address", "127.0.0.1");
}

/** Runs a simulator until SIGINT or SIGTERM. */
async function runUntilStopped(running: RunningSimulator, cli: CliContext, lines: string[]): Promise<void> {
  cli.print({ url: running.url });
  for (const line of lines) cli.note(line);
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  await running.close();
}

export function providersCli(program: Command, cli: CliContext): void {
  const provider = program.command("provider").description("a tenant's verification providers (brokers)");
  provider
    .command("set")
    .description("configure a provider for a tenant (credentials are stored encrypted, never shown again)")
    .requiredOption("--tenant <tenantId>", "the tenant")
    .requiredOption("--broker <brokerId>", "sumsub or opensanctions")
    .requiredOption("--base-url <url>", "the vendor's API (production, sandbox, or `cds simulate`)")
    .requiredOption(
      "--credential <name=value>",
      "a credential (repeatable): sumsub appToken= and secretKey=, opensanctions apiKey=",
      collectCredential,
    )
    .option("--webhook-secret <secret>", "the secret the vendor signs its webhooks with (sumsub)")
    .option("--timeout-ms <ms>", "deadline of one vendor call (default 10000)", positiveInt)
    .action(
      async (opts: {
        tenant: string;
        broker: string;
        baseUrl: string;
        credential: Record<string, string>;
        webhookSecret?: string;
        timeoutMs?: number;
      }) => {
        cli.print(
          await cli
            .client()
            .request("PUT", `${t(opts.tenant)}/providers/${encodeURIComponent(opts.broker)}`, {
              baseUrl: opts.baseUrl,
              credentials: opts.credential,
              ...(opts.webhookSecret === undefined ? {} : { webhookSecret: opts.webhookSecret }),
              ...(opts.timeoutMs === undefined ? {} : { timeoutMs: opts.timeoutMs }),
            }),
        );
        cli.note("Register inboundWebhookUrl at the vendor as the webhook URL.");
      },
    );
  listCommand(provider, cli, "providers", "list a tenant's provider configurations (never the credentials)");
  deleteCommand(provider, cli, "providers", ["--broker <brokerId>", "the broker"], {
    description: "delete a provider configuration",
    done: (id) => `deleted the ${id} configuration`,
  });

  const simulate = program
    .command("simulate")
    .description(
      "run a vendor simulator on this machine, speaking the vendor's API (no vendor account needed)",
    );
  simulator(
    simulate,
    "sumsub",
    "a Sumsub stand-in: applicants, tokens, WebSDK links whose page approves or rejects",
    8090,
  )
    .option("--app-token <token>", "the app token it accepts", SUMSUB_SIMULATOR_DEFAULTS.appToken)
    .option(
      "--secret-key <key>",
      "the secret key requests are signed with",
      SUMSUB_SIMULATOR_DEFAULTS.secretKey,
    )
    .option("--webhook-url <url>", "where review webhooks go: the configuration's inboundWebhookUrl")
    .option(
      "--webhook-secret <secret>",
      "the secret webhooks are signed with",
      SUMSUB_SIMULATOR_DEFAULTS.webhookSecret,
    )
    .action(
      async (opts: {
        port: number;
        host: string;
        appToken: string;
        secretKey: string;
        webhookUrl?: string;
        webhookSecret: string;
      }) => {
        const sim = new SumsubSimulator({
          appToken: opts.appToken,
          secretKey: opts.secretKey,
          webhookSecret: opts.webhookSecret,
          ...(opts.webhookUrl ? { webhookUrl: opts.webhookUrl } : {}),
        });
        const running = await sim.listen(opts.port, opts.host);
        await runUntilStopped(running, cli, [
          `Sumsub simulator on ${running.url}. Configure the tenant with:`,
          `  npx cds provider set --tenant <tenantId> --broker sumsub --base-url ${running.url} \\`,
          `    --credential appToken=${opts.appToken} --credential secretKey=${opts.secretKey} --webhook-secret ${opts.webhookSecret}`,
          opts.webhookUrl
            ? `Review webhooks go to ${opts.webhookUrl}.`
            : `Then tell it where webhooks go: POST ${running.url}/_simulator/webhook {"url": <inboundWebhookUrl>, "secret": "${opts.webhookSecret}"} (or restart with --webhook-url).`,
          "Open a verification_url to approve or reject the applicant; Ctrl-C stops.",
        ]);
      },
    );
  simulator(
    simulate,
    "opensanctions",
    "an OpenSanctions (yente) stand-in: the match API over a few made-up entities",
    8091,
  )
    .option("--api-key <key>", "the API key it accepts", OPENSANCTIONS_SIMULATOR_DEFAULTS.apiKey)
    .action(async (opts: { port: number; host: string; apiKey: string }) => {
      const sim = new OpenSanctionsSimulator({ apiKey: opts.apiKey });
      const running = await sim.listen(opts.port, opts.host);
      await runUntilStopped(running, cli, [
        `OpenSanctions simulator on ${running.url}. Configure the tenant with:`,
        `  npx cds provider set --tenant <tenantId> --broker opensanctions --base-url ${running.url} --credential apiKey=${opts.apiKey}`,
        `It knows: ${sim.entities.map((e) => e.caption).join(", ")}. Ctrl-C stops.`,
      ]);
    });
}
