import { CASE_TYPES } from "../../case-model/index.js";
import { SCAN_LIMIT } from "../../cases/index.js";
import { FilterSelect, Time } from "./components.js";

// The pieces the lists of cases share (the review queue, All cases and Mine): the links that keep
// the filters, the filters they all offer, and the link to a case.

/** The page at `base` with the filters `values`, changed by `changes`; empty values are left out. */
export function filterUrl(
  base: string,
  values: Record<string, string>,
  changes: Record<string, string>,
): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries({ ...values, ...changes })) if (v) params.set(k, v);
  const query = params.toString();
  return `${base}${query ? `?${query}` : ""}`;
}

/** The filters every list of cases offers: the case's type, its workflow and a tag. */
export function TypeWorkflowTagFilters({
  values,
  workflows,
  tags,
}: {
  values: { type: string; workflowId: string; tag: string };
  workflows: readonly string[];
  tags: readonly string[];
}) {
  return (
    <>
      <FilterSelect name="type" title="Type" value={values.type} options={CASE_TYPES.map((t) => [t, t])} />
      <FilterSelect
        name="workflowId"
        title="Workflow"
        value={values.workflowId}
        options={workflows.map((w) => [w, w])}
      />
      <FilterSelect name="tag" title="Tag" value={values.tag} options={tags.map((t) => [t, t])} />
    </>
  );
}

/** The order of a list: its own (`own`: "Newest first", "Oldest first") or by due date. */
export function SortSelect({ value, own }: { value: string; own: string }) {
  return <FilterSelect name="sort" title="Order" value={value} any={own} options={[["due", "Due date"]]} />;
}

/** When a case's review is due, in red once it is overdue (a dash when it has no deadline). */
export function DueCell({ row }: { row: { dueAt: Date | null; overdue: boolean } }) {
  return (
    <td class={row.overdue ? "overdue" : undefined}>
      {row.dueAt ? (
        <>
          <Time iso={row.dueAt.toISOString()} />
          {row.overdue ? <div class="small">overdue</div> : null}
        </>
      ) : (
        <span class="muted">—</span>
      )}
    </td>
  );
}

/** A case's cell: its name (or "Case" and its short id) linking to it, its short id below. */
export function CaseCell({ row }: { row: { id: string; display_name: string | null } }) {
  return (
    <td>
      <a class="case-link" href={`/console/cases/${row.id}`}>
        {row.display_name ?? `Case ${row.id.slice(0, 8)}`}
      </a>
      <div class="small muted mono">{row.id.slice(0, 8)}</div>
    </td>
  );
}

/** Under a list whose page stopped reading (a tag few cases carry): the next page reads on. */
export function ScannedNote({ scanned }: { scanned: boolean }) {
  return scanned ? (
    <p class="small muted">
      Fewer cases carry this tag than a page holds among the next {SCAN_LIMIT.toLocaleString("en")} cases
      read: the next page reads on.
    </p>
  ) : null;
}
