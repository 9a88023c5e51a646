import type { Command } from "commander";
import type { OperatorClient } from "./client.js";

/** What a feature's CLI commands get: the operator API client and the ways to answer. */
export interface CliContext {
  client(): OperatorClient;
  /** Prints a result (pretty JSON on stdout). */
  print(value: unknown): void;
  /** Prints a result for a human to read, line by line, on stdout. */
  write(lines: string[]): void;
  /** Prints a remark for a human on stderr. */
  note(message: string): void;
}

/** `a,b , c` → `["a","b","c"]`. */
export function list(value: string): string[] {
  return value
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}

export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`expected a positive integer, got "${value}"`);
  return n;
}

/** The operator API's path of a tenant's resources: `/admin/tenants/<tenant>/<part>/…`, encoded. */
export function tenantPath(tenant: string, ...parts: string[]): string {
  return ["/admin/tenants", tenant, ...parts].map((p, i) => (i === 0 ? p : encodeURIComponent(p))).join("/");
}

/** `path` with the query of `params`, leaving out those without a value (undefined or empty). */
export function withQuery(path: string, params: Record<string, string | number | undefined>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== "") query.set(name, String(value));
  }
  return query.size > 0 ? `${path}?${query}` : path;
}

/** A required option of a command: its flags, its description, and how its value is parsed. */
export type RequiredOption = readonly [
  flags: string,
  description: string,
  parse?: (value: string) => unknown,
];

/** `--tenant <tenantId>`, the option most operator commands begin with. */
export const TENANT_OPTION: RequiredOption = ["--tenant <tenantId>", "the tenant"];

/** A command of `parent` with its required options; the caller adds the rest and its action. */
export function commandOf(
  parent: Command,
  name: string,
  description: string,
  required: readonly RequiredOption[],
): Command {
  const command = parent.command(name).description(description);
  for (const [flags, description, parse] of required) {
    if (parse) command.requiredOption(flags, description, parse);
    else command.requiredOption(flags, description);
  }
  return command;
}

/**
 * A command that makes one call of the operator API with no body and prints its answer (or, for
 * a DELETE, says what it deleted): the lists, shows and deletes every feature's CLI has.
 */
export function callCommand<O extends Record<string, unknown>>(
  parent: Command,
  cli: CliContext,
  spec: {
    name: string;
    description: string;
    options: readonly RequiredOption[];
    method?: "GET" | "POST" | "DELETE";
    path(opts: O): string;
    /** For a DELETE: the note once done. */
    done?(opts: O): string;
  },
): Command {
  return commandOf(parent, spec.name, spec.description, spec.options).action(async (opts: O) => {
    const answer = await cli.client().request(spec.method ?? "GET", spec.path(opts));
    if (spec.done) cli.note(spec.done(opts));
    else cli.print(answer);
  });
}

/** `list --tenant <tenantId>`: prints the tenant's `collection` (`/admin/tenants/<id>/<collection>`). */
export function listCommand(
  parent: Command,
  cli: CliContext,
  collection: string,
  description: string,
): Command {
  const path = (o: { tenant: string }) => tenantPath(o.tenant, collection);
  return callCommand(parent, cli, { name: "list", description, options: [TENANT_OPTION], path });
}

/**
 * `delete --tenant <tenantId> --<id> <value>`: deletes one of the tenant's `collection`, then says
 * so with `done` (given the id).
 */
export function deleteCommand(
  parent: Command,
  cli: CliContext,
  collection: string,
  id: RequiredOption,
  spec: { description: string; done(id: string): string },
): Command {
  const key = id[0].slice(2).split(" ")[0] as string;
  const idOf = (o: Record<string, string>) => o[key] as string;
  return callCommand(parent, cli, {
    name: "delete",
    description: spec.description,
    options: [TENANT_OPTION, id],
    method: "DELETE",
    path: (o: Record<string, string>) => tenantPath(o.tenant as string, collection, idOf(o)),
    done: (o) => spec.done(idOf(o)),
  });
}
