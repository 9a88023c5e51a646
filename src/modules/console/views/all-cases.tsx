import { CASE_STATUSES, DECISION_VALUES } from "../../case-model/index.js";
import type { AllCasesPage } from "../all-cases.service.js";
import {
  CaseCell,
  DueCell,
  filterUrl,
  ScannedNote,
  SortSelect,
  TypeWorkflowTagFilters,
} from "./case-list.js";
import { Badge, DataTable, FilterSelect, label, Pager, Time } from "./components.js";
import { Csrf, FieldError, FormError, Layout, Notice, type PageContext, PageHead } from "./layout.js";

export const ALL_CASES_NOTICES: Record<string, string> = {
  "filter-saved": "The filter was saved for everyone in your team.",
  "filter-deleted": "The saved filter was deleted.",
  assigned: "The cases were assigned.",
  released: "The cases were released.",
  tagged: "The tag was added to the cases.",
  closed: "The cases were closed.",
};

function Input({
  name,
  title,
  value,
  type = "text",
}: {
  name: string;
  title: string;
  value: string;
  type?: "text" | "date" | "number";
}) {
  if (type === "number")
    return (
      <label class="field">
        {title}
        <input type="number" name={name} value={value} step="any" min="0" />
      </label>
    );
  if (type === "date")
    return (
      <label class="field">
        {title}
        <input type="date" name={name} value={value} />
      </label>
    );
  return (
    <label class="field">
      {title}
      <input type="text" name={name} value={value} />
    </label>
  );
}

/** The "All cases" view (and "Mine", the same view of the signed-in user's cases). */
export function AllCasesView({
  page,
  view,
  mine,
  notice,
  canAct,
  isAdmin,
}: {
  page: PageContext;
  view: AllCasesPage;
  mine: boolean;
  notice?: string;
  canAct: boolean;
  isAdmin: boolean;
}) {
  const f = view.form;
  const base = mine ? "/console/mine" : "/console/cases";
  const title = mine ? "My cases" : "All cases";
  const order = f.sort === "due" ? "by due date, overdue first" : "newest first";
  const filtered = Object.entries(f).some(([k, v]) => v !== "" && !(mine && k === "assignee"));
  const names = new Map(view.users.map((u) => [u.userId, u.name]));
  const me = page.session?.userId;
  return (
    <Layout page={page} title={title}>
      <PageHead title={title}>
        <p>
          {mine
            ? `The cases you own, ${order}. Overdue ones are marked.`
            : `Every case of every status and decision, ${order}. Search by name, customer id, any identifier or case id.`}
        </p>
      </PageHead>
      {notice ? <Notice kind="ok">{notice}</Notice> : null}
      <form method="get" action={base} class="filters" aria-label="Filters">
        <label class="field search">
          Search
          <input
            type="search"
            name="q"
            value={f.q}
            placeholder="Name, customer id, IBAN, e-mail, case id…"
            maxLength={200}
          />
        </label>
        <FilterSelect
          name="status"
          title="Status"
          value={f.status}
          options={CASE_STATUSES.map((s) => [s, label(s)])}
        />
        <FilterSelect
          name="decision"
          title="Decision"
          value={f.decision}
          options={DECISION_VALUES.map((d) => [d, label(d)])}
        />
        <TypeWorkflowTagFilters values={f} workflows={view.workflows} tags={view.tags} />
        {mine ? null : (
          <FilterSelect
            name="assignee"
            title="Assignee"
            value={f.assignee}
            options={[
              ["me", "Me"],
              ["none", "Nobody"],
              ...view.users.map((u): [string, string] => [u.userId, u.name]),
            ]}
          />
        )}
        <Input name="from" title="Created from" type="date" value={f.from} />
        <Input name="to" title="Created to" type="date" value={f.to} />
        <Input name="amountMin" title="Amount from" type="number" value={f.amountMin} />
        <Input name="amountMax" title="Amount to" type="number" value={f.amountMax} />
        <SortSelect value={f.sort} own="Newest first" />
        <div class="actions">
          <button type="submit" class="primary">
            Search
          </button>
          {filtered ? (
            <a class="button" href={base}>
              Clear
            </a>
          ) : null}
        </div>
      </form>
      <section class="saved-filters" aria-label="Saved filters">
        <span class="small muted">Saved filters:</span>{" "}
        {view.saved.length === 0 ? <span class="small muted">none yet.</span> : null}
        {view.saved.map((s) => (
          <span class="chip">
            <a href={`/console/cases?${s.query}`}>{s.name}</a>
            {isAdmin || s.createdBy === `analyst:${me}` ? (
              <form method="post" action={`/console/cases/filters/${s.filterId}/delete`}>
                <Csrf page={page} />
                <button type="submit" aria-label={`Delete saved filter ${s.name}`}>
                  ×
                </button>
              </form>
            ) : null}
          </span>
        ))}
        {!mine && filtered ? (
          <form method="post" action="/console/cases/filters" class="actions inline-form">
            <Csrf page={page} />
            <input type="hidden" name="query" value={view.query} />
            <FormError page={page} form="filter" />
            <label class="field">
              Name this filter
              <input type="text" name="name" required maxLength={100} />
              <FieldError page={page} form="filter" field="name" />
            </label>
            <button type="submit">Save this filter</button>
          </form>
        ) : null}
      </section>
      {canAct && view.rows.length > 0 ? (
        <form
          method="post"
          action="/console/cases/bulk"
          id="bulk"
          class="filters bulk"
          aria-label="Bulk actions"
        >
          <Csrf page={page} />
          <input type="hidden" name="back" value={filterUrl(base, f, {})} />
          <FormError page={page} form="bulk" />
          <label class="field">
            With the chosen cases
            <select name="action" required>
              <option value="">Choose…</option>
              <option value="take">Take them (assign to me)</option>
              {isAdmin ? <option value="assign">Assign to…</option> : null}
              <option value="release">Release them</option>
              <option value="tag">Add the tag…</option>
              <option value="close">Close them</option>
            </select>
          </label>
          {isAdmin ? (
            <FilterSelect
              name="assignee"
              title="Assign to"
              value=""
              options={view.users.map((u): [string, string] => [u.userId, u.name])}
            />
          ) : null}
          <FilterSelect name="tag" title="Tag to add" value="" options={view.tags.map((t) => [t, t])} />
          <div class="actions">
            <button type="submit">Apply to the chosen cases</button>
          </div>
        </form>
      ) : null}
      {view.rows.length === 0 ? (
        <div class="panel empty">No case {filtered ? "matches this search" : mine ? "is yours" : "yet"}.</div>
      ) : (
        <DataTable
          caption={`${title}, ${order}`}
          keyboard
          columns={[
            ...(canAct ? [{ head: <span class="skip">Choose</span> }] : []),
            "Case",
            "Status",
            "Type",
            { head: "Customer", narrow: true },
            { head: "Assignee", narrow: true },
            "Due",
            { head: "Created", narrow: true },
          ]}
          rows={view.rows}
          row={(row) => (
            <>
              {canAct ? (
                <td>
                  <input
                    type="checkbox"
                    name="caseId"
                    value={row.id}
                    form="bulk"
                    aria-label={`Choose ${row.display_name ?? row.id}`}
                  />
                </td>
              ) : null}
              <CaseCell row={row} />
              <td>
                <Badge value={row.status} />
                {row.decision_value && row.decision_value !== row.status ? (
                  <div class="small">
                    <Badge value={row.decision_value} text={label(row.decision_value)} />
                  </div>
                ) : null}
              </td>
              <td>
                {row.type}
                {row.amount !== null ? <div class="small muted">{row.amount}</div> : null}
              </td>
              <td class="hide-narrow">{row.external_customer_id ?? <span class="muted">—</span>}</td>
              <td class="hide-narrow">
                {row.assignee_id ? (
                  (names.get(row.assignee_id) ?? "a former user")
                ) : (
                  <span class="muted">—</span>
                )}
              </td>
              <DueCell row={row} />
              <td class="hide-narrow">
                <Time iso={row.created_at.toISOString()} />
              </td>
            </>
          )}
        />
      )}
      <ScannedNote scanned={view.scanned} />
      <Pager
        first={view.paged ? filterUrl(base, f, {}) : undefined}
        next={view.nextCursor ? filterUrl(base, f, { cursor: view.nextCursor }) : undefined}
      />
    </Layout>
  );
}
