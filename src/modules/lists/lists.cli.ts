import fs from "node:fs";
import type { Command } from "commander";
import {
  type CliContext,
  callCommand,
  commandOf,
  deleteCommand,
  positiveInt,
  type RequiredOption,
  TENANT_OPTION,
  tenantPath,
  withQuery,
} from "../../platform/cli/context.js";
import { LIST_LIMITS } from "./lists.service.js";

const LIST_OPTION: RequiredOption = ["--list <listId>", "the list id, e.g. blocked_ibans"];

/** The values of a file, one a line (a trailing carriage return dropped, empty lines skipped). */
export function valuesOfText(text: string): string[] {
  return text.split(/\r?\n/).filter((line) => line.trim() !== "");
}

/** A command of `cds list` about one list: `--tenant` and `--list` required. */
const listCommand = (list: Command, name: string, description: string) =>
  commandOf(list, name, description, [TENANT_OPTION, LIST_OPTION]);

/**
 * `add` or `remove`: the values given and those of `--file`, in calls of at most 10,000 values
 * (each one transaction); prints the list's count after the last call.
 */
function changeCommand(list: Command, cli: CliContext, kind: "add" | "remove"): void {
  listCommand(
    list,
    kind,
    `${kind} values (normalised by the list's rule); a --file of more than ${LIST_LIMITS.valuesPerCall} ` +
      "values is sent in several calls, each applied in one transaction",
  )
    .option("--file <path>", "a file of values, one a line")
    .argument("[values...]", "values")
    .action(async (values: string[], opts: { tenant: string; list: string; file?: string }) => {
      const all = [...values, ...(opts.file ? valuesOfText(fs.readFileSync(opts.file, "utf8")) : [])];
      if (all.length === 0) throw new Error(`no values to ${kind}: give them as arguments or with --file`);
      const path = tenantPath(opts.tenant, "lists", opts.list, "values");
      let answer: unknown;
      for (let at = 0; at < all.length; at += LIST_LIMITS.valuesPerCall) {
        const chunk = all.slice(at, at + LIST_LIMITS.valuesPerCall);
        answer = await cli.client().request("POST", path, { [kind]: chunk });
        if (all.length > LIST_LIMITS.valuesPerCall) {
          cli.note(
            `${kind === "add" ? "added" : "removed"} values ${at + 1}–${at + chunk.length} of ${all.length}`,
          );
        }
      }
      cli.print(answer);
    });
}

/** `cds list`: a tenant's named lists of values, which workflows read with `inList`. */
export function listsCli(program: Command, cli: CliContext): void {
  const list = program.command("list").description("a tenant's named lists of values (inList in workflows)");
  listCommand(list, "set", "create a list, or set its description or rule")
    .option("--description <text>", "what the list holds")
    .option("--normalize <rule>", "none, or an entity type (iban, email, phone, …) whose rule applies")
    .action(async (opts: { tenant: string; list: string; description?: string; normalize?: string }) => {
      // An option not given is undefined, and left out of the JSON body: the list keeps that field.
      const body = { description: opts.description, normalize: opts.normalize };
      cli.print(await cli.client().request("PUT", tenantPath(opts.tenant, "lists", opts.list), body));
    });
  callCommand(list, cli, {
    name: "ls",
    description: "list the tenant's lists with their value counts",
    options: [TENANT_OPTION],
    path: (o: { tenant: string }) => tenantPath(o.tenant, "lists"),
  });
  changeCommand(list, cli, "add");
  changeCommand(list, cli, "remove");
  listCommand(list, "values", "page through a list's values")
    .option("--prefix <text>", "only values starting with it")
    .option("--limit <n>", `values per page (up to ${LIST_LIMITS.pageMax})`, positiveInt)
    .option("--cursor <cursor>", "the nextCursor of the previous page")
    .action(
      async (opts: { tenant: string; list: string; prefix?: string; limit?: number; cursor?: string }) => {
        const { prefix, limit, cursor } = opts;
        const path = withQuery(tenantPath(opts.tenant, "lists", opts.list, "values"), {
          prefix,
          limit,
          cursor,
        });
        cli.print(await cli.client().request("GET", path));
      },
    );
  deleteCommand(list, cli, "lists", LIST_OPTION, {
    description: "delete a list and its values (refused while a published version reads it)",
    done: (id) => `deleted list ${id}`,
  });
}
