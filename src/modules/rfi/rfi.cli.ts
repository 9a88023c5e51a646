import type { Command } from "commander";
import { type CliContext, callCommand, list } from "../../platform/cli/context.js";

const collect = (value: string, previous: string[] = []) => [...previous, value];

function split(pair: string, what: string): [string, string | undefined] {
  const at = pair.indexOf("=");
  if (at === -1) return [pair, undefined];
  if (at === 0) throw new Error(`${what} "${pair}" needs a name before "="`);
  return [pair.slice(0, at), pair.slice(at + 1)];
}

export function rfiCli(program: Command, cli: CliContext): void {
  const rfi = program.command("rfi").description("information requests, as an analyst");
  const path = (caseId: string, rest = "") => `/admin/cases/${encodeURIComponent(caseId)}/rfi${rest}`;
  const one = (opts: { case: string; rfi: string }, action: string) =>
    path(opts.case, `/${encodeURIComponent(opts.rfi)}/${action}`);

  rfi
    .command("raise")
    .description("raise a request on a case (the tenant's systems send the e-mail from case.rfi_requested)")
    .requiredOption("--case <caseId>", "the case")
    .requiredOption("--actor <userId>", "the analyst raising it")
    .requiredOption("--to <address>", "the customer's e-mail address")
    .requiredOption("--subject <text>", "the e-mail's subject")
    .requiredOption("--body <text>", "the e-mail's text")
    .option("--cc <addresses>", "comma-separated copy addresses", list)
    .option("--template <templateId>", "the tenant's e-mail template")
    .option("--webhook-key <key>", "deliver the events to this named webhook configuration")
    .option("--expires-at <timestamp>", "deadline (RFC 3339); the request expires then")
    .action(
      async (opts: {
        case: string;
        actor: string;
        to: string;
        subject: string;
        body: string;
        cc?: string[];
        template?: string;
        webhookKey?: string;
        expiresAt?: string;
      }) => {
        cli.print(
          await cli.client().request("POST", path(opts.case), {
            actor: opts.actor,
            to: opts.to,
            subject: opts.subject,
            body: opts.body,
            ...(opts.cc ? { cc: opts.cc } : {}),
            ...(opts.template ? { templateId: opts.template } : {}),
            ...(opts.webhookKey ? { webhookKey: opts.webhookKey } : {}),
            ...(opts.expiresAt ? { expiresAt: opts.expiresAt } : {}),
          }),
        );
      },
    );

  callCommand(rfi, cli, {
    name: "list",
    description: "list a case's requests with their answers and documents",
    options: [["--case <caseId>", "the case"]],
    path: (o: { case: string }) => path(o.case),
  });

  rfi
    .command("remind")
    .description("send a pending request's case.rfi_requested again (same rfi_id, fresh webhookId)")
    .requiredOption("--case <caseId>", "the case")
    .requiredOption("--rfi <rfiId>", "the request")
    .action(async (opts: { case: string; rfi: string }) => {
      cli.print(await cli.client().request("POST", one(opts, "remind")));
    });

  rfi
    .command("cancel")
    .description("cancel a pending request")
    .requiredOption("--case <caseId>", "the case")
    .requiredOption("--rfi <rfiId>", "the request")
    .option("--actor <userId>", "the analyst cancelling it")
    .action(async (opts: { case: string; rfi: string; actor?: string }) => {
      cli.print(
        await cli
          .client()
          .request("POST", one(opts, "cancel"), opts.actor === undefined ? undefined : { actor: opts.actor }),
      );
    });

  rfi
    .command("answer")
    .description(
      "record an analyst's answer (string field values; documents by the uploadId of a minted slot)",
    )
    .requiredOption("--case <caseId>", "the case")
    .requiredOption("--rfi <rfiId>", "the request")
    .requiredOption("--actor <userId>", "the analyst answering")
    .option("--field <key=value>", "an answered field (repeatable, in order)", collect)
    .option("--document <uploadId[=label]>", "an uploaded document to attach (repeatable)", collect)
    .action(
      async (opts: { case: string; rfi: string; actor: string; field?: string[]; document?: string[] }) => {
        const fields = (opts.field ?? []).map((pair) => {
          const [key, value] = split(pair, "field");
          return { key, value: value ?? null };
        });
        const documents = (opts.document ?? []).map((pair) => {
          const [uploadId, label] = split(pair, "document");
          return label === undefined ? { uploadId } : { uploadId, label };
        });
        cli.print(
          await cli.client().request("POST", one(opts, "answer"), { actor: opts.actor, fields, documents }),
        );
      },
    );
}
