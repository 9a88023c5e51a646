import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { badRequest, notFound } from "../../platform/errors.js";
import { dryRunCase, submissionProblems } from "../cases/index.js";
import {
  type ConsoleSection,
  DataTable,
  Field,
  FormPanel,
  formOf,
  Layout,
  LinkCell,
  Notice,
  type PageContext,
  Panel,
  PostButton,
  pageOf,
  SubmitButton,
  seeOther,
  sendPage,
  sessionOf,
  Time,
} from "../console/index.js";
import type { Permission } from "../users/index.js";
import { getVersion, getWorkflows, isJsonObject, publishVersion } from "../workflows/index.js";
import {
  type BacktestView,
  type CaseResultView,
  getBacktest,
  getBacktestCases,
  getBacktests,
  startBacktest,
} from "./backtests.service.js";

// The console's workflow pages (contract section 8): the tenant's workflows and versions, a
// version's definition in words and as JSON, a diff of two versions, and for admins a dry run, a
// backtest and publishing. They live here, with backtests, because the console imports the
// workflows module and so cannot be imported by it.

const read = { console: { permission: "workflows:read" as Permission } };
const manage = { console: { permission: "workflows:manage" as Permission } };
const HOME = "/console/workflows";

type Workflows = Awaited<ReturnType<typeof getWorkflows>>;
type Version = Awaited<ReturnType<typeof getVersion>>;
type WorkflowParams = { Params: { workflowId: string } };

const workflowPath = (workflowId: string, query?: Record<string, string>) =>
  `${HOME}/${encodeURIComponent(workflowId)}${query ? `?${new URLSearchParams(query)}` : ""}`;
const backtestPath = (backtestId: string) => `/console/backtests/${backtestId}`;

const NOTICES: Record<string, string> = {
  published: "The version was published: new cases use it.",
};

/** A node of a definition in words: where it goes, and on what. */
export function nodeInWords(node: Record<string, unknown>): string[] {
  const lines: string[] = [];
  const target = (key: string, words: string) => {
    if (typeof node[key] === "string") lines.push(`${words} → ${node[key]}`);
  };
  if (Array.isArray(node.rules)) {
    for (const rule of node.rules.filter(isJsonObject)) {
      if (typeof rule.when === "string" && typeof rule.next === "string")
        lines.push(`if ${rule.when} → ${rule.next}`);
      else if (typeof rule.when === "string") lines.push(`if ${rule.when}: ${JSON.stringify(rule)}`);
    }
  }
  if (Array.isArray(node.cases)) {
    for (const c of node.cases.filter(isJsonObject)) {
      if (typeof c.when === "string") lines.push(`if ${c.when} → decide ${String(c.decision ?? "")}`);
    }
  }
  if (typeof node.decision === "string") lines.push(`decide ${node.decision}`);
  if (isJsonObject(node.aggregates)) {
    for (const [name, f] of Object.entries(node.aggregates))
      lines.push(`figure ${name}: ${JSON.stringify(f)}`);
  }
  if (typeof node.provider === "string") lines.push(`run the provider ${node.provider}`);
  target("default", "otherwise");
  target("next", "then");
  for (const key of ["onTimeout", "onError", "onExpired", "onCancelled"]) target(key, `on ${key.slice(2)}`);
  return lines;
}

/** A line diff of two texts (longest common subsequence): each line kept, removed or added. */
export function lineDiff(a: string[], b: string[]): Array<{ kind: " " | "-" | "+"; line: string }> {
  const n = a.length;
  const m = b.length;
  const lcs: number[][] = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      const row = lcs[i] as number[];
      row[j] =
        a[i] === b[j]
          ? ((lcs[i + 1] as number[])[j + 1] as number) + 1
          : Math.max((lcs[i + 1] as number[])[j] as number, row[j + 1] as number);
    }
  }
  const out: Array<{ kind: " " | "-" | "+"; line: string }> = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) {
      out.push({ kind: " ", line: a[i] as string });
      i++;
      j++;
    } else if (
      j < m &&
      (i >= n || ((lcs[i] as number[])[j + 1] as number) > ((lcs[i + 1] as number[])[j] as number))
    ) {
      out.push({ kind: "+", line: b[j] as string });
      j++;
    } else {
      out.push({ kind: "-", line: a[i] as string });
      i++;
    }
  }
  return out;
}

const pretty = (v: Version) => JSON.stringify(v.definition, null, 2).split("\n");

function WorkflowsPage({ page, workflows }: { page: PageContext; workflows: Workflows }) {
  return (
    <Layout page={page} title="Workflows">
      <h1>Workflows</h1>
      <Panel id="workflows" title="The tenant's workflows">
        <DataTable
          caption="Workflows"
          rows={workflows}
          empty="No workflows yet."
          columns={["Workflow", { head: "Current version", num: true }, { head: "Versions", num: true }]}
          row={(w) => (
            <>
              <LinkCell href={workflowPath(w.workflowId)}>{w.workflowId}</LinkCell>
              <td class="num">{w.currentVersion ?? "—"}</td>
              <td class="num">{w.versions.length}</td>
            </>
          )}
        />
      </Panel>
    </Layout>
  );
}

function WorkflowPage({
  page,
  workflow,
  version,
  compare,
  backtests,
  canManage,
  notice,
}: {
  page: PageContext;
  workflow: Workflows[number];
  version: Version;
  compare: Version | undefined;
  backtests: BacktestView[];
  canManage: boolean;
  notice?: string;
}) {
  const id = workflow.workflowId;
  const nodes = Array.isArray(version.definition.nodes) ? version.definition.nodes.filter(isJsonObject) : [];
  const now = Date.now();
  return (
    <Layout page={page} title={`Workflow ${id}`}>
      <p class="small">
        <a href={HOME}>Workflows</a> › <span class="mono">{id}</span>
      </p>
      <h1>
        Workflow <span class="mono">{id}</span> version {version.version}
      </h1>
      {notice ? <Notice kind="ok">{notice}</Notice> : null}
      <div class="grid grid-case">
        <div>
          <Panel id="versions" title="Versions">
            <DataTable
              caption={`Versions of ${id}`}
              rows={[...workflow.versions].reverse()}
              empty="No versions."
              columns={[
                { head: "Version", num: true },
                "Created",
                "Published",
                "Compare",
                ...(canManage ? [""] : []),
              ]}
              row={(v) => (
                <>
                  <td class="num">
                    <a href={workflowPath(id, { version: String(v.version) })}>
                      {v.version}
                      {v.version === workflow.currentVersion ? " (current)" : ""}
                    </a>
                  </td>
                  <td>
                    <Time iso={v.createdAt} />
                  </td>
                  <td>
                    <Time iso={v.publishedAt ?? undefined} />
                  </td>
                  <td>
                    {v.version === version.version ? null : (
                      <a
                        href={workflowPath(id, {
                          version: String(version.version),
                          compare: String(v.version),
                        })}
                        aria-label={`Compare version ${version.version} with version ${v.version}`}
                      >
                        with {v.version}
                      </a>
                    )}
                  </td>
                  {canManage ? (
                    <td>
                      {v.version === workflow.currentVersion ? null : (
                        <PostButton
                          page={page}
                          action={`${workflowPath(id)}/publish`}
                          fields={{ version: String(v.version) }}
                          label="Publish"
                          ariaLabel={`Publish version ${v.version}`}
                        />
                      )}
                    </td>
                  ) : null}
                </>
              )}
            />
          </Panel>
          <Panel id="definition" title={`Version ${version.version} in words`}>
            <p class="small">
              Starts at <span class="mono">{String(version.definition.start)}</span>.
            </p>
            <dl>
              {nodes.map((n) => (
                <>
                  <dt class="mono">
                    {String(n.id)} ({String(n.type)})
                  </dt>
                  {nodeInWords(n).map((line) => (
                    <dd>{line}</dd>
                  ))}
                </>
              ))}
            </dl>
          </Panel>
          {compare ? (
            <Panel id="diff" title={`Version ${compare.version} → version ${version.version}`}>
              <pre class="mono" data-diff>
                {lineDiff(pretty(compare), pretty(version)).map((d) => (
                  <span class={d.kind === "+" ? "diff-add" : d.kind === "-" ? "diff-remove" : undefined}>
                    {`${d.kind} ${d.line}\n`}
                  </span>
                ))}
              </pre>
            </Panel>
          ) : null}
          <Panel id="json" title={`Version ${version.version} as JSON`}>
            <pre class="mono">{JSON.stringify(version.definition, null, 2)}</pre>
          </Panel>
        </div>
        <div>
          {canManage ? (
            <FormPanel
              page={page}
              id="backtest"
              title="Backtest this version"
              action={`${workflowPath(id)}/backtests`}
            >
              <input type="hidden" name="version" value={String(version.version)} />
              <p class="small">
                Runs version {version.version} over the workflow's past cases; nothing is written to them.
              </p>
              <Field label="From" hint="cases accepted at or after (RFC 3339)">
                <input
                  type="text"
                  name="from"
                  required
                  value={new Date(now - 30 * 86_400_000).toISOString()}
                />
              </Field>
              <Field label="To" hint="and before (RFC 3339)">
                <input type="text" name="to" required value={new Date(now + 60_000).toISOString()} />
              </Field>
              <Field label="Sample" hint="at most this many cases, evenly spread (optional)">
                <input type="number" name="sample" min={1} max={100_000} />
              </Field>
              <SubmitButton>Start backtest</SubmitButton>
            </FormPanel>
          ) : null}
          {canManage ? (
            <FormPanel page={page} id="dry-run" title="Dry run a case" action={`${workflowPath(id)}/dry-run`}>
              <input type="hidden" name="version" value={String(version.version)} />
              <Field label="Case" hint="a case submission as JSON: type, payload, subject">
                <textarea name="submission" rows={8} required>
                  {'{\n  "type": "KYC",\n  "payload": {},\n  "subject": {}\n}'}
                </textarea>
              </Field>
              <SubmitButton>Dry run</SubmitButton>
            </FormPanel>
          ) : null}
          <Panel id="backtests" title="Backtests">
            <DataTable
              caption={`Backtests of ${id}`}
              rows={backtests}
              empty="No backtest yet."
              columns={[{ head: "Version", num: true }, "Status", "Started"]}
              row={(b) => (
                <>
                  <td class="num">
                    <a href={backtestPath(b.backtestId)}>{b.version}</a>
                  </td>
                  <td>
                    {b.status} ({b.done} of {b.total})
                  </td>
                  <td>
                    <Time iso={b.createdAt} />
                  </td>
                </>
              )}
            />
          </Panel>
        </div>
      </div>
    </Layout>
  );
}

function BacktestPage({
  page,
  backtest,
  changed,
}: {
  page: PageContext;
  backtest: BacktestView;
  changed: CaseResultView[];
}) {
  const s = backtest.summary;
  const before = Object.keys(s.decisions).sort();
  const after = [...new Set(before.flatMap((k) => Object.keys(s.decisions[k] ?? {})))].sort();
  const running = backtest.status === "running";
  return (
    <Layout page={page} title="Backtest">
      {running ? <meta http-equiv="refresh" content="2" /> : null}
      <p class="small">
        <a href={HOME}>Workflows</a> ›{" "}
        <a class="mono" href={workflowPath(backtest.workflowId, { version: String(backtest.version) })}>
          {backtest.workflowId}
        </a>{" "}
        › Backtest
      </p>
      <h1>
        Backtest of version {backtest.version}: <span data-status>{backtest.status}</span>
      </h1>
      <p role="status">
        {backtest.done} of {backtest.total} cases replayed, accepted from <Time iso={backtest.from} /> to{" "}
        <Time iso={backtest.to} />.{running ? " This page refreshes until it ends." : ""}
      </p>
      <div class="grid grid-case">
        <Panel id="matrix" title="Decisions: before (rows) and after (columns)">
          <table>
            <caption>Cases by the workflow's decision and the candidate's</caption>
            <thead>
              <tr>
                <th scope="col">before \ after</th>
                {after.map((a) => (
                  <th scope="col" class="num">
                    {a}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {before.map((b) => (
                <tr>
                  <th scope="row">{b}</th>
                  {after.map((a) => (
                    <td class="num">{s.decisions[b]?.[a] ?? 0}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
          <p>
            Changed {s.changed}, unchanged {s.unchanged}, needs an input {s.needsInput}, failed {s.errors}.
          </p>
          <DataTable
            caption="Nodes reached"
            rows={s.nodes}
            empty="No node reached yet."
            columns={["Node", { head: "Reached", num: true }, { head: "Before", num: true }]}
            row={(n) => (
              <>
                <td class="mono">{n.nodeId}</td>
                <td class="num">{n.reached}</td>
                <td class="num">{n.reachedBefore}</td>
              </>
            )}
          />
        </Panel>
        <Panel id="changed" title="Changed cases">
          <DataTable
            caption="Cases whose decision changed"
            rows={changed}
            empty="No case changed."
            columns={["Case", "Before", "After", "Path"]}
            row={(c) => (
              <>
                <LinkCell href={`/console/cases/${c.caseId}`}>{c.caseId.slice(0, 8)}</LinkCell>
                <td>
                  {c.before.decision ?? "none"}
                  {c.before.override ? ` (overridden to ${c.before.override})` : ""}
                </td>
                <td>
                  {c.after.needsInput
                    ? `needs an input at ${c.after.needsInput}`
                    : c.after.error
                      ? "failed"
                      : c.after.decision}
                </td>
                <td class="mono">{c.after.path.join(" → ")}</td>
              </>
            )}
          />
        </Panel>
      </div>
    </Layout>
  );
}

function versionOf(text: string | undefined): number | undefined {
  if (text === undefined || text === "") return undefined;
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 1) throw badRequest("version must be a positive integer");
  return n;
}

function workflowRoutes(scope: App, ctx: AppContext): void {
  scope.get("/workflows", { config: read }, async (request, reply) => {
    const { tenantId } = sessionOf(request);
    return sendPage(
      reply,
      <WorkflowsPage page={pageOf(request, reply)} workflows={await getWorkflows(ctx, tenantId)} />,
    );
  });

  scope.get<WorkflowParams & { Querystring: { version?: string; compare?: string; done?: string } }>(
    "/workflows/:workflowId",
    { config: read },
    async (request, reply) => {
      const session = sessionOf(request);
      const { workflowId } = request.params;
      const workflow = (await getWorkflows(ctx, session.tenantId)).find((w) => w.workflowId === workflowId);
      if (!workflow) throw notFound(`workflow ${workflowId}`);
      const latest = workflow.versions[workflow.versions.length - 1]?.version ?? 1;
      const chosen = versionOf(request.query.version) ?? workflow.currentVersion ?? latest;
      const other = versionOf(request.query.compare);
      const [version, compare, all] = await Promise.all([
        getVersion(ctx, session.tenantId, workflowId, chosen),
        other === undefined ? undefined : getVersion(ctx, session.tenantId, workflowId, other),
        getBacktests(ctx, session.tenantId),
      ]);
      const page = pageOf(request, reply);
      return sendPage(
        reply,
        <WorkflowPage
          page={page}
          workflow={workflow}
          version={version}
          compare={compare}
          backtests={all.backtests.filter((b) => b.workflowId === workflowId)}
          canManage={page.session?.role === "admin"}
          notice={request.query.done ? NOTICES[request.query.done] : undefined}
        />,
      );
    },
  );

  scope.post<WorkflowParams>("/workflows/:workflowId/publish", { config: manage }, async (request, reply) => {
    const session = sessionOf(request);
    const version = versionOf(formOf(request).text("version")) ?? 0;
    await publishVersion(ctx, session.tenantId, request.params.workflowId, version, session.actor);
    return seeOther(
      reply,
      workflowPath(request.params.workflowId, { version: String(version), done: "published" }),
    );
  });

  scope.post<WorkflowParams>(
    "/workflows/:workflowId/backtests",
    { config: manage },
    async (request, reply) => {
      const session = sessionOf(request);
      const form = formOf(request);
      const sample = form.text("sample");
      const started = await startBacktest(
        ctx,
        session.tenantId,
        {
          workflowId: request.params.workflowId,
          version: versionOf(form.text("version")) ?? 0,
          from: form.text("from"),
          to: form.text("to"),
          ...(sample ? { sample: Number(sample) } : {}),
        },
        session.actor,
      );
      return seeOther(reply, backtestPath(started.backtestId));
    },
  );

  scope.post<WorkflowParams>("/workflows/:workflowId/dry-run", { config: manage }, async (request, reply) => {
    const session = sessionOf(request);
    const form = formOf(request);
    let submission: unknown;
    try {
      submission = JSON.parse(form.raw("submission"));
    } catch {
      throw badRequest("the case must be JSON: {type, payload, subject}");
    }
    if (!isJsonObject(submission))
      throw badRequest("the case must be a JSON object: {type, payload, subject}");
    const target = { workflowId: request.params.workflowId, version: versionOf(form.text("version")) ?? 0 };
    const problems = await submissionProblems(ctx, session.tenantId, submission, target);
    if (problems.length > 0) throw badRequest("the case is not a valid submission", problems);
    const kase = await dryRunCase(
      ctx,
      session.tenantId,
      target.workflowId,
      target.version,
      submission as Parameters<typeof dryRunCase>[4],
      request.id,
      { wait: true },
    );
    return seeOther(reply, `/console/cases/${kase.caseId}`);
  });

  scope.get<{ Params: { backtestId: string } }>(
    "/backtests/:backtestId",
    { config: read },
    async (request, reply) => {
      const { tenantId } = sessionOf(request);
      const { backtestId } = request.params;
      const [backtest, changed] = await Promise.all([
        getBacktest(ctx, tenantId, backtestId),
        getBacktestCases(ctx, tenantId, backtestId, { changed: true, limit: 100 }),
      ]);
      return sendPage(
        reply,
        <BacktestPage page={pageOf(request, reply)} backtest={backtest} changed={changed.cases} />,
      );
    },
  );
}

/** The console's Workflows: versions, definitions, diffs, backtests (analysts read; admins act). */
export const backtestsConsole: ConsoleSection = {
  links: [{ href: HOME, title: "Workflows", permission: "workflows:read", place: "main" }],
  routes: workflowRoutes,
};
