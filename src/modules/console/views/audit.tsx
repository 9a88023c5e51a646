import type { AuditRow } from "../../users/index.js";
import {
  ActorName,
  DataTable,
  Field,
  Fields,
  FilterSelect,
  Pager,
  SubmitButton,
  Time,
} from "./components.js";
import { Layout, type PageContext, PageHead } from "./layout.js";

function Filters({ query, names }: { query: Record<string, string>; names: ReadonlyMap<string, string> }) {
  return (
    <form method="get" action="/console/audit" class="filters" aria-label="Filters">
      <FilterSelect name="actor" title="Who" any="Anyone" value={query.actor ?? ""} options={[...names]} />
      <FilterSelect
        name="action"
        title="What"
        any="Any change"
        value={query.action ?? ""}
        options={Object.entries(AUDIT_ACTIONS)}
      />
      <Field label="Case id">
        <input type="text" name="caseId" value={query.caseId ?? ""} />
      </Field>
      <Field label="From">
        <input type="date" name="from" value={query.from ?? ""} />
      </Field>
      <Field label="To">
        <input type="date" name="to" value={query.to ?? ""} />
      </Field>
      <div class="actions">
        <SubmitButton>Show</SubmitButton>
        <a class="button" href={`/console/audit.csv?${new URLSearchParams(query).toString()}`} download>
          Export CSV
        </a>
      </div>
    </form>
  );
}

/** Each action the log records, in words. */
export const AUDIT_ACTIONS: Record<string, string> = {
  "case.override": "Overrode the decision",
  "case.close": "Closed the case",
  "case.tag_add": "Added a tag",
  "case.tag_remove": "Removed a tag",
  "rfi.raise": "Requested information",
  "rfi.remind": "Sent a reminder",
  "rfi.cancel": "Cancelled an information request",
  "rfi.answer": "Answered an information request",
  "apikey.create": "Created an API key",
  "apikey.delete": "Deleted an API key",
  "tag_option.set": "Changed the tag vocabulary",
  "webhook.set": "Saved a webhook configuration",
  "webhook.delete": "Deleted a webhook configuration",
  "webhook.redeliver": "Redelivered a webhook",
  "webhook.redeliver_failed": "Redelivered the failed webhooks",
  "webhook.test": "Sent a test event",
  "user.create": "Created a user",
  "user.delete": "Deleted a user",
  "user.role": "Changed a user's role",
  "user.setup_link": "Issued a new setup link",
  "user.password_set": "Set their password",
  "case.assign": "Assigned the case",
  "case.release": "Released the case",
  "case.comment": "Commented",
  "case_filter.save": "Saved a filter",
  "case_filter.delete": "Deleted a saved filter",
  "review_sla.set": "Changed the review deadlines",
  "list.create": "Created a list",
  "list.set": "Changed a list",
  "list.values": "Changed a list's values",
  "workflow.version": "Created a workflow version",
  "workflow.publish": "Published a workflow version",
  "backtest.start": "Started a backtest",
  "list.delete": "Deleted a list",
  "screening.review": "Gave a verdict on a screening hit",
  "provider.action": "Ran a provider action",
  "provider.set": "Configured a provider",
  "provider.delete": "Removed a provider's configuration",
  "customer.attributes": "Changed a customer's attributes",
};

function Target({ target, names }: { target: string; names: ReadonlyMap<string, string> }) {
  const [kind, id] = target.split(/:(.*)/s);
  if (kind === "case" && id)
    return <a href={`/console/cases/${id}`} class="mono">{`case ${id.slice(0, 8)}`}</a>;
  const name =
    kind === "user" ? names.get(`analyst:${id}`) : kind === "apikey" ? names.get(target) : undefined;
  if (name) return <span title={target}>{name}</span>;
  return (
    <span class="mono">{kind === "user" || kind === "rfi" ? `${kind} ${id?.slice(0, 8)}` : target}</span>
  );
}

export function AuditPageView({
  page,
  rows,
  names,
  next,
  paged,
  query,
}: {
  page: PageContext;
  rows: AuditRow[];
  names: ReadonlyMap<string, string>;
  next: number | undefined;
  paged: boolean;
  /** The filters of the page, as its query string's fields. */
  query: Record<string, string>;
}) {
  const filtered = Object.keys(query).length > 0;
  const url = (extra: Record<string, string>) =>
    `/console/audit?${new URLSearchParams({ ...query, ...extra }).toString()}`;
  return (
    <Layout page={page} title="Audit log">
      <PageHead title="Audit log">
        <p>
          Every change to your cases and settings, whatever made it (the console, the operator API and CLI,
          your API keys), newest first: who, when, what, and the state before and after.
        </p>
      </PageHead>
      <Filters query={query} names={names} />
      {rows.length === 0 ? (
        <div class="panel empty">
          {filtered ? "No change matches these filters." : "No changes have been made yet."}
        </div>
      ) : (
        <DataTable
          caption="Audit log"
          columns={["When", "Who", "What", "On", "Before", "After"]}
          rows={rows}
          row={(r) => (
            <>
              <td>
                <Time iso={r.at.toISOString()} seconds />
              </td>
              <td>
                <ActorName actor={r.actor} names={names} />
              </td>
              <td>{AUDIT_ACTIONS[r.action] ?? r.action}</td>
              <td>
                <Target target={r.target} names={names} />
              </td>
              <td class="small">
                {r.before === null ? <span class="muted">—</span> : <Fields value={r.before} />}
              </td>
              <td class="small">
                {r.after === null ? <span class="muted">—</span> : <Fields value={r.after} />}
              </td>
            </>
          )}
        />
      )}
      <Pager
        first={paged ? url({}) : undefined}
        next={next === undefined ? undefined : url({ before: String(next) })}
        firstText="Newest"
        nextText="Older"
      />
    </Layout>
  );
}
