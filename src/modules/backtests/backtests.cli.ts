import type { Command } from "commander";
import {
  type CliContext,
  callCommand,
  commandOf,
  positiveInt,
  type RequiredOption,
  TENANT_OPTION,
  tenantPath,
  withQuery,
} from "../../platform/cli/context.js";
import type { BacktestView, CaseResultView } from "./backtests.service.js";

const BACKTEST_OPTION: RequiredOption = ["--backtest <backtestId>", "the backtest's id"];

/** The keys of a matrix's axis, decisions first, in a fixed order. */
const ORDER = ["approved", "declined", "in_review", "failed", "none", "needsInput"];
const byOrder = (a: string, b: string) =>
  (ORDER.indexOf(a) + 1 || ORDER.length + 1) - (ORDER.indexOf(b) + 1 || ORDER.length + 1) ||
  a.localeCompare(b);

/** Rows of cells as aligned columns, the first left-aligned, the others right-aligned. */
function columns(rows: string[][]): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  }
  return rows.map((row) =>
    row
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
      .join("  ")
      .trimEnd(),
  );
}

/** A backtest in words: its progress, the decision matrix (before in rows, after in columns), the nodes. */
export function describeBacktest(b: BacktestView): string[] {
  const s = b.summary;
  const before = Object.keys(s.decisions).sort(byOrder);
  const after = [...new Set(before.flatMap((k) => Object.keys(s.decisions[k] ?? {})))].sort(byOrder);
  const lines = [
    `backtest ${b.backtestId}: ${b.workflowId} v${b.version} over cases from ${b.from} to ${b.to}`,
    `${b.status}: ${b.done} of ${b.total} cases replayed${b.error ? ` (${b.error})` : ""}`,
    "",
  ];
  if (before.length > 0) {
    lines.push(
      ...columns([
        ["before \\ after", ...after],
        ...before.map((k) => [k, ...after.map((a) => String(s.decisions[k]?.[a] ?? 0))]),
      ]),
      "",
    );
  }
  lines.push(
    `changed ${s.changed}, unchanged ${s.unchanged}, needs an input ${s.needsInput}, failed ${s.errors}`,
  );
  if (s.nodes.length > 0) {
    lines.push(
      "",
      ...columns([
        ["node", "reached", "before"],
        ...s.nodes.map((n) => [n.nodeId, String(n.reached), String(n.reachedBefore)]),
      ]),
    );
  }
  return lines;
}

/** A replayed case in one line: `<caseId>  approved → in_review  (start → check → review)`. */
export function describeCase(c: CaseResultView): string {
  const { before, after } = c;
  const to = after.needsInput
    ? `needs an input at ${after.needsInput}`
    : after.error
      ? `failed: ${after.error}`
      : (after.decision ?? "none");
  const override = before.override ? ` (overridden to ${before.override})` : "";
  return `${c.caseId}  ${before.decision ?? "none"}${override} → ${to}  (${after.path.join(" → ")})`;
}

const TERMINAL = new Set(["completed", "cancelled", "failed"]);

/** `cds backtest`: run a candidate workflow version over past cases (contract section 8). */
export function backtestsCli(program: Command, cli: CliContext): void {
  const backtest = program
    .command("backtest")
    .description("run a workflow version over past cases before publishing it");
  /** A backtest in words, or as JSON with `--json`. */
  const show = (b: BacktestView, json: boolean | undefined) => {
    if (json) cli.print(b);
    else cli.write(describeBacktest(b));
  };
  commandOf(
    backtest,
    "run",
    "start a backtest of a version over the workflow's cases accepted in [from, to)",
    [
      TENANT_OPTION,
      ["--workflow <workflowId>", "the workflow"],
      ["--version <n>", "the candidate version", positiveInt],
      ["--from <time>", "the window's start (RFC 3339)"],
      ["--to <time>", "the window's end, excluded (RFC 3339)"],
    ],
  )
    .option("--case-type <type>", "only cases of this type (KYC, KYB, Transaction)")
    .option("--sample <n>", "an even sample of at most this many cases", positiveInt)
    .option("--wait", "wait for it to end, then print the decision matrix")
    .option("--json", "print JSON instead of words")
    .action(
      async (opts: {
        tenant: string;
        workflow: string;
        version: number;
        from: string;
        to: string;
        caseType?: string;
        sample?: number;
        wait?: boolean;
        json?: boolean;
      }) => {
        const client = cli.client();
        // An option not given is undefined, and left out of the JSON body.
        const { from, to, caseType, sample } = opts;
        const body = { workflowId: opts.workflow, version: opts.version, from, to, caseType, sample };
        let b = (await client.request("POST", tenantPath(opts.tenant, "backtests"), body)) as BacktestView;
        if (!opts.wait) {
          cli.print(b);
          return;
        }
        let shown = -1;
        while (!TERMINAL.has(b.status)) {
          if (b.done !== shown && b.total > 0) cli.note(`${b.done} of ${b.total} cases replayed`);
          shown = b.done;
          await new Promise((resolve) => setTimeout(resolve, 500));
          b = (await client.request(
            "GET",
            tenantPath(opts.tenant, "backtests", b.backtestId),
          )) as BacktestView;
        }
        show(b, opts.json);
      },
    );
  commandOf(backtest, "show", "a backtest's progress and decision matrix", [TENANT_OPTION, BACKTEST_OPTION])
    .option("--json", "print JSON instead of words")
    .action(async (opts: { tenant: string; backtest: string; json?: boolean }) => {
      const path = tenantPath(opts.tenant, "backtests", opts.backtest);
      show((await cli.client().request("GET", path)) as BacktestView, opts.json);
    });
  commandOf(backtest, "cases", "the cases whose decision changed (every case with --all), one a line", [
    TENANT_OPTION,
    BACKTEST_OPTION,
  ])
    .option("--all", "every replayed case, changed or not")
    .option("--json", "print JSON instead of words")
    .action(async (opts: { tenant: string; backtest: string; all?: boolean; json?: boolean }) => {
      const client = cli.client();
      const cases: CaseResultView[] = [];
      let cursor: string | null = null;
      do {
        const query = { limit: 1000, changed: opts.all ? undefined : "true", cursor: cursor ?? undefined };
        const path = withQuery(tenantPath(opts.tenant, "backtests", opts.backtest, "cases"), query);
        const page = (await client.request("GET", path)) as {
          cases: CaseResultView[];
          nextCursor: string | null;
        };
        cases.push(...page.cases);
        cursor = page.nextCursor;
      } while (cursor !== null);
      if (opts.json) cli.print({ cases });
      else cli.write(cases.length > 0 ? cases.map(describeCase) : ["no case changed"]);
    });
  callCommand(backtest, cli, {
    name: "ls",
    description: "the tenant's backtests, newest first",
    options: [TENANT_OPTION],
    path: (o: { tenant: string }) => tenantPath(o.tenant, "backtests"),
  });
  callCommand(backtest, cli, {
    name: "cancel",
    description: "cancel a running backtest",
    options: [TENANT_OPTION, BACKTEST_OPTION],
    method: "POST",
    path: (o: { tenant: string; backtest: string }) =>
      tenantPath(o.tenant, "backtests", o.backtest, "cancel"),
  });
}
