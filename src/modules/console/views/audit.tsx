import type { AuditRow } from "../../users/index.js";
import { ActorName, DataTable, Fields, Time } from "./components.js";
import { Layout, type PageContext, PageHead } from "./layout.js";

const ACTIONS: Record<string, string> = {
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
  "webhook.test": "Sent a test event",
  "user.create": "Created a user",
  "user.delete": "Deleted a user",
  "user.role": "Changed a user's role",
  "user.setup_link": "Issued a new setup link",
  "user.password_set": "Set their password",
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
}: {
  page: PageContext;
  rows: AuditRow[];
  names: ReadonlyMap<string, string>;
  next: number | undefined;
  paged: boolean;
}) {
  return (
    <Layout page={page} title="Audit log">
      <PageHead title="Audit log">
        <p>
          Every change made in the console, newest first: who, when, what, and the state before and after.
        </p>
      </PageHead>
      {rows.length === 0 ? (
        <div class="panel empty">No changes have been made in the console yet.</div>
      ) : (
        <DataTable
          caption="Audit log"
          columns={["When", "Who", "What", "On", "Before", "After"].map((head) => ({ head }))}
          rows={rows}
          row={(r) => (
            <>
              <td>
                <Time iso={r.at.toISOString()} seconds />
              </td>
              <td>
                <ActorName actor={r.actor} names={names} />
              </td>
              <td>{ACTIONS[r.action] ?? r.action}</td>
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
      <div class="pager">
        {paged ? (
          <a class="button" href="/console/audit">
            Newest
          </a>
        ) : (
          <span />
        )}
        {next !== undefined ? (
          <a class="button" href={`/console/audit?before=${next}`} rel="next">
            Older
          </a>
        ) : null}
      </div>
    </Layout>
  );
}
