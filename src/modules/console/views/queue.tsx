import { CASE_TYPES } from "../../case-model/index.js";
import { QUEUE_STATUSES } from "../../cases/index.js";
import { type AGES, COUNT_CAP, type QueuePage } from "../queue.service.js";
import { age, Badge, DataTable, Field, label, SubmitButton, TimeCell } from "./components.js";
import { Layout, type PageContext, PageHead } from "./layout.js";

const TAB_TITLES = { in_review: "In review", waiting: "Waiting", failed: "Failed" } as const;
const AGE_TITLES: Record<keyof typeof AGES, string> = {
  "1h": "Older than 1 hour",
  "24h": "Older than 24 hours",
  "3d": "Older than 3 days",
  "7d": "Older than 7 days",
  "30d": "Older than 30 days",
};

function queueUrl(filters: Record<string, string>, changes: Record<string, string>): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries({ ...filters, ...changes })) if (v) params.set(k, v);
  const query = params.toString();
  return `/console/queue${query ? `?${query}` : ""}`;
}

function Select({
  name,
  title,
  value,
  options,
}: {
  name: string;
  title: string;
  value: string;
  options: Array<[string, string]>;
}) {
  return (
    <Field label={title}>
      <select name={name}>
        <option value="">Any</option>
        {options.map(([v, text]) => (
          <option value={v} selected={v === value}>
            {text}
          </option>
        ))}
      </select>
    </Field>
  );
}

export function QueuePageView({ page, queue }: { page: PageContext; queue: QueuePage }) {
  const f = queue.filters;
  const filtered = Boolean(f.type || f.workflowId || f.tag || f.age);
  return (
    <Layout page={page} title="Review queue">
      <PageHead title="Review queue">
        <p>
          Oldest first. Press <kbd>j</kbd> and <kbd>k</kbd> to move through the cases, <kbd>Enter</kbd> to
          open one.
        </p>
      </PageHead>
      <nav class="tabs" aria-label="Queue status">
        {QUEUE_STATUSES.map((status) => (
          <a
            href={queueUrl({ ...f, status }, { cursor: "" })}
            aria-current={status === f.status ? "page" : undefined}
          >
            {TAB_TITLES[status]}
            <span class="count">
              {queue.counts[status] >= COUNT_CAP ? `${COUNT_CAP}+` : queue.counts[status]}
            </span>
          </a>
        ))}
      </nav>
      <form method="get" action="/console/queue" class="filters" aria-label="Filters">
        <input type="hidden" name="status" value={f.status} />
        <Select name="type" title="Type" value={f.type} options={CASE_TYPES.map((t) => [t, t])} />
        <Select
          name="workflowId"
          title="Workflow"
          value={f.workflowId}
          options={queue.workflows.map((w) => [w, w])}
        />
        <Select name="tag" title="Tag" value={f.tag} options={queue.tags.map((t) => [t, t])} />
        <Select
          name="age"
          title="Age"
          value={f.age}
          options={Object.entries(AGE_TITLES) as Array<[string, string]>}
        />
        <div class="actions">
          <SubmitButton>Apply filters</SubmitButton>
          {filtered ? (
            <a class="button" href={queueUrl({ status: f.status }, {})}>
              Clear
            </a>
          ) : null}
        </div>
      </form>
      {queue.rows.length === 0 ? (
        <div class="panel empty">
          No {TAB_TITLES[f.status].toLowerCase()} cases{filtered ? " match these filters" : ""}.
        </div>
      ) : (
        <DataTable
          caption={`${TAB_TITLES[f.status]} cases, oldest first`}
          keyboard
          columns={[
            { head: "Case" },
            { head: "Status" },
            { head: "Type" },
            { head: "Workflow", narrow: true },
            { head: "Customer", narrow: true },
            { head: "Age", num: true },
            { head: "Created", narrow: true },
          ]}
          rows={queue.rows}
          row={(row) => (
            <>
              <td>
                <a class="case-link" href={`/console/cases/${row.id}`}>
                  {row.display_name ?? `Case ${row.id.slice(0, 8)}`}
                </a>
                <div class="small muted mono">{row.id.slice(0, 8)}</div>
              </td>
              <td>
                <Badge value={row.status} />
                {row.decision_value && row.decision_value !== row.status ? (
                  <div class="small muted">decision: {label(row.decision_value)}</div>
                ) : null}
              </td>
              <td>{row.type}</td>
              <td class="hide-narrow">
                {row.workflow_id} <span class="muted">v{row.workflow_version}</span>
              </td>
              <td class="hide-narrow">{row.external_customer_id ?? <span class="muted">—</span>}</td>
              <td class="num">{age(row.created_at.toISOString())}</td>
              <TimeCell iso={row.created_at.toISOString()} narrow />
            </>
          )}
        />
      )}
      <div class="pager">
        {queue.paged ? (
          <a class="button" href={queueUrl(f, { cursor: "" })}>
            First page
          </a>
        ) : (
          <span />
        )}
        {queue.nextCursor ? (
          <a class="button" href={queueUrl(f, { cursor: queue.nextCursor })} rel="next">
            Next page
          </a>
        ) : null}
      </div>
    </Layout>
  );
}
