import { QUEUE_STATUSES } from "../../cases/index.js";
import { type AGES, COUNT_CAP, type QueuePage } from "../queue.service.js";
import {
  CaseCell,
  DueCell,
  filterUrl,
  ScannedNote,
  SortSelect,
  TypeWorkflowTagFilters,
} from "./case-list.js";
import { age, Badge, DataTable, FilterSelect, label, Pager, SubmitButton, TimeCell } from "./components.js";
import { Layout, type PageContext, PageHead } from "./layout.js";

const TAB_TITLES = { in_review: "In review", waiting: "Waiting", failed: "Failed" } as const;
const AGE_TITLES: Record<keyof typeof AGES, string> = {
  "1h": "Older than 1 hour",
  "24h": "Older than 24 hours",
  "3d": "Older than 3 days",
  "7d": "Older than 7 days",
  "30d": "Older than 30 days",
};

const queueUrl = (filters: Record<string, string>, changes: Record<string, string>) =>
  filterUrl("/console/queue", filters, changes);

export function QueuePageView({ page, queue }: { page: PageContext; queue: QueuePage }) {
  const f = queue.filters;
  const filtered = Boolean(f.type || f.workflowId || f.tag || f.age || f.sort);
  return (
    <Layout page={page} title="Review queue">
      <PageHead title="Review queue">
        <p>
          {f.sort === "due" ? "By due date, overdue first" : "Oldest first"}. Press <kbd>j</kbd> and{" "}
          <kbd>k</kbd> to move through the cases, <kbd>Enter</kbd> to open one.
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
        <TypeWorkflowTagFilters values={f} workflows={queue.workflows} tags={queue.tags} />
        <FilterSelect
          name="age"
          title="Age"
          value={f.age}
          options={Object.entries(AGE_TITLES) as Array<[string, string]>}
        />
        <SortSelect value={f.sort} own="Oldest first" />
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
          caption={`${TAB_TITLES[f.status]} cases, ${f.sort === "due" ? "by due date, overdue first" : "oldest first"}`}
          keyboard
          columns={[
            "Case",
            "Status",
            "Type",
            { head: "Workflow", narrow: true },
            { head: "Customer", narrow: true },
            { head: "Age", num: true },
            "Due",
            { head: "Created", narrow: true },
          ]}
          rows={queue.rows}
          row={(row) => (
            <>
              <CaseCell row={row} />
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
              <DueCell row={row} />
              <TimeCell iso={row.created_at.toISOString()} narrow />
            </>
          )}
        />
      )}
      <ScannedNote scanned={queue.scanned} />
      <Pager
        first={queue.paged ? queueUrl(f, { cursor: "" }) : undefined}
        next={queue.nextCursor ? queueUrl(f, { cursor: queue.nextCursor }) : undefined}
      />
    </Layout>
  );
}
