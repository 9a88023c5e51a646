import type { VNode } from "preact";
import { DECISION_VALUES } from "../../case-model/index.js";
import { mayWork } from "../../cases/index.js";
import { type InformationRequestView, RFI_LIMITS } from "../../rfi/index.js";
import { can } from "../../users/index.js";
import type { CaseScreen, TraceStep } from "../case.service.js";
import { CommentsPanel, OwnerPanel } from "./case-work.js";
import {
  ActorName,
  Attempts,
  Badge,
  DataTable,
  Field,
  Fields,
  label,
  Panel,
  SubmitButton,
  Time,
  TimeCell,
} from "./components.js";
import { Csrf, FormError, FormField, kept, Layout, Notice, type PageContext } from "./layout.js";

export const CASE_NOTICES: Record<string, string> = {
  decision: "The decision was overridden.",
  closed: "The case was closed.",
  tagged: "The tag was added.",
  untagged: "The tag was removed.",
  raised: "The information request was raised and sent.",
  reminded: "A reminder was sent.",
  cancelled: "The information request was cancelled.",
  answered: "The answer was recorded.",
  commented: "The comment was added.",
  assigned: "The owner was changed.",
};

type Names = ReadonlyMap<string, string>;

function caseTitle(screen: CaseScreen): string {
  const name = (screen.record.subject as { displayName?: unknown }).displayName;
  return typeof name === "string" && name.trim() ? name : `Case ${screen.record.caseId.slice(0, 8)}`;
}

function DecisionPanel({ screen, names }: { screen: CaseScreen; names: Names }) {
  const { decision, decisionHistory, workflow_result } = screen.record.result as {
    decision: { value: string; source: string; actor: string; decidedAt: string; reason?: string } | null;
    decisionHistory: Array<{
      value: string;
      source: string;
      actor: string;
      decidedAt: string;
      reason?: string;
    }>;
    workflow_result: unknown;
  };
  return (
    <Panel title="Decision" id="decision">
      {decision ? (
        <p>
          <Badge value={decision.value} /> by <ActorName actor={decision.actor} names={names} /> (
          {label(decision.source)}
          ), <Time iso={decision.decidedAt} />
          {decision.reason ? <span> — “{decision.reason}”</span> : null}
        </p>
      ) : (
        <p class="muted">No decision yet.</p>
      )}
      {decisionHistory.length > 0 ? (
        <div class="table-wrap">
          <table>
            <caption class="skip">Decision history</caption>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Decision</th>
                <th scope="col">By</th>
                <th scope="col">Reason</th>
              </tr>
            </thead>
            <tbody>
              {decisionHistory.map((d) => (
                <tr>
                  <TimeCell iso={d.decidedAt} />
                  <td>
                    <Badge value={d.value} />
                  </td>
                  <td>
                    <ActorName actor={d.actor} names={names} />{" "}
                    <span class="muted small">{label(d.source)}</span>
                  </td>
                  <td>{d.reason ?? <span class="muted">—</span>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {workflow_result !== null && workflow_result !== undefined ? (
        <>
          <h3>Workflow result</h3>
          <Fields value={workflow_result} />
        </>
      ) : null}
      {screen.record.error ? (
        <>
          <h3>Error</h3>
          <Fields value={screen.record.error} />
        </>
      ) : null}
    </Panel>
  );
}

function TracePanel({ trace }: { trace: TraceStep[] }) {
  return (
    <Panel title="Path through the workflow" id="trace">
      {trace.length === 0 ? (
        <p class="muted">The workflow has not run a step yet.</p>
      ) : (
        <ol class="trace">
          {trace.map((step) => (
            <li class={step.status}>
              <div>
                <strong class="mono">{step.nodeId}</strong> <span class="muted">{step.nodeType}</span>{" "}
                <Badge value={step.status} />
                {step.next ? (
                  <span class="muted">
                    {" "}
                    → <span class="mono">{step.next}</span>
                  </span>
                ) : null}
              </div>
              {step.facts.length > 0 ? (
                <ul class="why">
                  {step.facts.map((fact) => (
                    <li>{fact}</li>
                  ))}
                </ul>
              ) : null}
              {step.output !== null && step.output !== undefined ? (
                <details>
                  <summary class="small">Output</summary>
                  <Fields value={step.output} />
                </details>
              ) : null}
              <div class="small muted">
                <Time iso={step.startedAt} />
              </div>
            </li>
          ))}
        </ol>
      )}
    </Panel>
  );
}

function Document({
  caseId,
  doc,
}: {
  caseId: string;
  doc: { uploadId: string; filename: string; contentType: string; sizeBytes: number; label: string | null };
}) {
  const src = `/console/cases/${caseId}/documents/${doc.uploadId}`;
  return (
    <figure class="doc">
      {doc.contentType === "application/pdf" ? (
        <iframe src={src} sandbox="" title={`Document ${doc.filename}`} loading="lazy" />
      ) : (
        <img src={src} alt={doc.label ?? doc.filename} loading="lazy" />
      )}
      <figcaption class="small">
        <a href={src} download={doc.filename}>
          {doc.filename}
        </a>{" "}
        <span class="muted">
          {doc.contentType}, {Math.ceil(doc.sizeBytes / 1024)} KB{doc.label ? ` — ${doc.label}` : ""}
        </span>
      </figcaption>
    </figure>
  );
}

/** One field of an analyst's answer: its key and its value (the form adds rows from a template). */
function AnswerRow({ placeholder }: { placeholder?: string }) {
  return (
    <div class="answer-row">
      <Field label="Field name">
        <input type="text" name="fieldKey" pattern="[A-Za-z_][A-Za-z0-9_]*" placeholder={placeholder} />
      </Field>
      <Field label="Value">
        <input type="text" name="fieldValue" />
      </Field>
    </div>
  );
}

function RequestCard({
  page,
  caseId,
  rfi,
  names,
  canAct,
}: {
  page: PageContext;
  caseId: string;
  rfi: InformationRequestView;
  names: Names;
  canAct: boolean;
}) {
  const base = `/console/cases/${caseId}/rfi/${rfi.rfiId}`;
  const pending = rfi.status === "pending";
  return (
    <article class="rfi" aria-label={`Information request: ${rfi.subject}`}>
      <header>
        <div>
          <strong>{rfi.subject}</strong> <Badge value={rfi.status} />
          <div class="small muted">
            To {rfi.to}
            {rfi.cc.length > 0 ? ` (cc ${rfi.cc.join(", ")})` : ""} · raised by{" "}
            <ActorName actor={rfi.requestedBy} names={names} /> <Time iso={rfi.createdAt} />
            {rfi.expiresAt ? (
              <>
                {" "}
                · due <Time iso={rfi.expiresAt} />
              </>
            ) : null}
            {rfi.reminderCount > 0 ? ` · ${rfi.reminderCount} reminder(s)` : ""}
          </div>
        </div>
        {canAct && pending ? (
          <div class="actions">
            <form method="post" action={`${base}/remind`}>
              <Csrf page={page} />
              <button type="submit">Send reminder</button>
            </form>
            <form method="post" action={`${base}/cancel`} data-confirm="Cancel this information request?">
              <Csrf page={page} />
              <button type="submit" class="danger">
                Cancel request
              </button>
            </form>
          </div>
        ) : null}
      </header>
      <details>
        <summary class="small">Message</summary>
        <pre>{rfi.body}</pre>
      </details>
      {rfi.answer ? (
        <div>
          <h3>
            Answer by <ActorName actor={rfi.answer.answeredBy} names={names} />,{" "}
            <Time iso={rfi.answer.answeredAt} />
          </h3>
          {rfi.answer.fields.length > 0 ? (
            <dl class="kv">
              {rfi.answer.fields.map((f) => (
                <>
                  <dt>{f.label ?? f.key}</dt>
                  <dd>{f.value === null ? "—" : String(f.value)}</dd>
                </>
              ))}
            </dl>
          ) : null}
          {rfi.answer.documents.length > 0 ? (
            <div class="docs">
              {rfi.answer.documents.map((doc) => (
                <Document caseId={caseId} doc={doc} />
              ))}
            </div>
          ) : null}
        </div>
      ) : null}
      {canAct && pending ? (
        <details>
          <summary>Answer on the customer's behalf</summary>
          <form method="post" action={`${base}/answer`} class="stack" data-upload={`${base}/uploads`}>
            <Csrf page={page} />
            <div data-field-rows>
              <AnswerRow placeholder="source_of_funds" />
            </div>
            <button type="button" data-add-field={`field-template-${rfi.rfiId}`}>
              Add a field
            </button>
            <template id={`field-template-${rfi.rfiId}`}>
              <AnswerRow />
            </template>
            <Field label="Documents" hint="PDF, JPEG or PNG, up to 20 MB each">
              <input type="file" name="documents" multiple accept="application/pdf,image/jpeg,image/png" />
            </Field>
            <p class="small muted" data-upload-status aria-live="polite" />
            <SubmitButton>Record the answer</SubmitButton>
          </form>
        </details>
      ) : null}
    </article>
  );
}

function RequestsPanel({ page, screen, canAct }: { page: PageContext; screen: CaseScreen; canAct: boolean }) {
  const requests = screen.record.informationRequests as InformationRequestView[];
  const caseId = screen.record.caseId;
  return (
    <Panel title="Information requests" id="rfi">
      {requests.length === 0 ? <p class="muted">No information has been requested on this case.</p> : null}
      {requests.map((rfi) => (
        <RequestCard page={page} caseId={caseId} rfi={rfi} names={screen.names} canAct={canAct} />
      ))}
      {requests.length >= RFI_LIMITS.shownPerCase ? (
        <p class="muted">Only the {RFI_LIMITS.shownPerCase} most recent requests are shown.</p>
      ) : null}
      {canAct ? (
        <details open={page.problem?.form === "rfi"}>
          <summary>Request information</summary>
          <form method="post" action={`/console/cases/${caseId}/rfi`} class="stack">
            <Csrf page={page} />
            <FormError page={page} form="rfi" />
            <FormField page={page} form="rfi" field="to" label="To" hint="the customer's email address">
              <input type="email" name="to" required value={kept(page, "rfi", "to")} />
            </FormField>
            <FormField page={page} form="rfi" field="cc" label="Cc" hint="optional, comma-separated">
              <input type="text" name="cc" value={kept(page, "rfi", "cc")} />
            </FormField>
            <FormField page={page} form="rfi" field="subject" label="Subject">
              <input
                type="text"
                name="subject"
                required
                maxLength={1000}
                value={kept(page, "rfi", "subject")}
              />
            </FormField>
            <FormField page={page} form="rfi" field="body" label="Message">
              <textarea name="body" required value={kept(page, "rfi", "body")} />
            </FormField>
            <FormField page={page} form="rfi" field="expiresAt" label="Deadline (UTC)" hint="optional">
              <input type="datetime-local" name="expiresAt" value={kept(page, "rfi", "expiresAt")} />
            </FormField>
            <SubmitButton>Send the request</SubmitButton>
          </form>
        </details>
      ) : null}
    </Panel>
  );
}

/** How many decisions the case had when the page was drawn: an override made on it names this. */
function decisionCount(screen: CaseScreen): number {
  return (screen.record.result as { decisionHistory: unknown[] }).decisionHistory.length;
}

function ActionsPanel({ page, screen }: { page: PageContext; screen: CaseScreen }) {
  const caseId = screen.record.caseId;
  const hasDecision = (screen.record.result as { decision: unknown }).decision !== null;
  return (
    <Panel title="Review" id="review">
      {hasDecision ? (
        <form method="post" action={`/console/cases/${caseId}/decision`} class="stack">
          <Csrf page={page} />
          <input type="hidden" name="basedOn" value={String(decisionCount(screen))} />
          <FormError page={page} form="decision" />
          <FormField page={page} form="decision" field="value" label="New decision">
            <select name="value" required>
              <option value="" selected={kept(page, "decision", "value") === ""}>
                Choose…
              </option>
              {DECISION_VALUES.map((v) => (
                <option value={v} selected={kept(page, "decision", "value") === v}>
                  {label(v)}
                </option>
              ))}
            </select>
          </FormField>
          <FormField
            page={page}
            form="decision"
            field="reason"
            label="Reason"
            hint="required; the partner sees it in the history"
          >
            <textarea name="reason" required maxLength={2000} value={kept(page, "decision", "reason")} />
          </FormField>
          <SubmitButton>Override the decision</SubmitButton>
        </form>
      ) : (
        <p class="muted">The workflow has not decided yet; the decision can be overridden once it has.</p>
      )}
      <form
        method="post"
        action={`/console/cases/${caseId}/close`}
        data-confirm="Close this case for good? Nothing more will happen on it."
      >
        <Csrf page={page} />
        <h3>Close the case</h3>
        <p class="small muted">Stops whatever it waits on. A closed case cannot be reopened.</p>
        <button type="submit" class="danger">
          Close the case
        </button>
      </form>
    </Panel>
  );
}

function TagsPanel({ page, screen, canAct }: { page: PageContext; screen: CaseScreen; canAct: boolean }) {
  const caseId = screen.record.caseId;
  return (
    <Panel title="Tags" id="tags">
      {screen.record.tags.length === 0 ? <p class="muted">No tags.</p> : null}
      <div>
        {screen.record.tags.map((t) => (
          <span class="chip" title={`added by ${screen.names.get(t.createdBy) ?? t.createdBy}`}>
            {t.tag}
            {canAct ? (
              <form method="post" action={`/console/cases/${caseId}/tags/remove`}>
                <Csrf page={page} />
                <input type="hidden" name="tag" value={t.tag} />
                <button type="submit" aria-label={`Remove tag ${t.tag}`}>
                  ×
                </button>
              </form>
            ) : null}
          </span>
        ))}
      </div>
      {canAct && screen.addableTags.length > 0 ? (
        <form method="post" action={`/console/cases/${caseId}/tags`} class="actions">
          <Csrf page={page} />
          <Field label="Add a tag">
            <select name="tag" required>
              {screen.addableTags.map((t) => (
                <option value={t}>{t}</option>
              ))}
            </select>
          </Field>
          <button type="submit">Add</button>
        </form>
      ) : null}
    </Panel>
  );
}

function PendingPanel({ screen }: { screen: CaseScreen }) {
  return (
    <Panel title="Waiting on" id="pending">
      {screen.paused.length === 0 ? (
        <p class="muted">Nothing outside the service is being waited on.</p>
      ) : (
        <ul>
          {screen.paused.map((p) => (
            <li>
              <span class="mono">{p.nodeId}</span>
              {p.providerId ? ` (provider ${p.providerId})` : " (callback)"}
              {p.expiresAt ? (
                <>
                  , until <Time iso={p.expiresAt} />
                </>
              ) : null}
              {p.providerId === null && p.availableActions.length > 0 ? (
                <div class="small muted">Actions: {p.availableActions.map((a) => a.label).join(", ")}</div>
              ) : null}
              {p.providerId ? (
                <div class="small muted">
                  Its actions are under <a href="#provider-actions">Provider actions</a>.
                </div>
              ) : null}
            </li>
          ))}
        </ul>
      )}
    </Panel>
  );
}

function DeliveriesPanel({ screen }: { screen: CaseScreen }) {
  return (
    <Panel title="Webhook deliveries" id="deliveries">
      <DataTable
        caption="Webhook deliveries of this case"
        rows={screen.deliveries}
        empty="No webhook has been sent about this case."
        columns={[
          "Event",
          "Status",
          "Attempts (time, duration, answer)",
          { head: "Endpoint", narrow: true },
          "Created",
        ]}
        row={(d) => (
          <>
            <td class="mono">{d.eventType}</td>
            <td>
              <Badge value={d.status} />
            </td>
            <td>
              <Attempts attempts={d.attempts} />
            </td>
            <td class="hide-narrow">{d.webhookKey}</td>
            <TimeCell iso={d.createdAt} />
          </>
        )}
      />
    </Panel>
  );
}

export function CasePageView({
  page,
  screen,
  notice,
  result,
}: {
  page: PageContext;
  screen: CaseScreen;
  notice?: string;
  result?: VNode;
}) {
  const r = screen.record;
  const session = page.session;
  const terminal = r.status === "closed" || r.status === "failed";
  const reviewer = Boolean(session && can(session.role, "cases:review"));
  const canAct = reviewer && !terminal && !r.dryRun;
  // Analysts work their own cases (and those nobody owns); admins act on any.
  const ownedElsewhere =
    !session || !mayWork({ userId: session.userId, admin: session.role === "admin" }, screen.work.assigneeId);
  const decision = (r.result as { decision: { value: string } | null }).decision;
  return (
    <Layout page={page} title={caseTitle(screen)}>
      <div class="page-head">
        <div>
          <p class="small">
            <a href="/console/queue">Review queue</a> ›
          </p>
          <h1>{caseTitle(screen)}</h1>
          <p>
            <Badge value={r.status} />{" "}
            {decision ? <Badge value={decision.value} text={`decision: ${label(decision.value)}`} /> : null}{" "}
            {r.dryRun ? <Badge value="dry_run" text="dry run" /> : null} {r.type} · {r.workflowId} v
            {r.workflowVersion} · created <Time iso={r.createdAt} />
          </p>
        </div>
      </div>
      {notice ? <Notice kind="ok">{notice}</Notice> : null}
      {result ?? null}
      <div class="grid grid-case">
        <div>
          <DecisionPanel screen={screen} names={screen.names} />
          {screen.featureMainPanels}
          <CommentsPanel page={page} screen={screen} canComment={reviewer} />
          <TracePanel trace={screen.trace} />
          <RequestsPanel page={page} screen={screen} canAct={canAct} />
          <Panel title="Subject" id="subject">
            <Fields value={r.subject} />
          </Panel>
          <Panel title="Payload" id="payload">
            <Fields value={r.payload} empty="No payload." />
          </Panel>
          <Panel title="Metadata" id="metadata">
            <Fields value={r.metadata} empty="No metadata." />
          </Panel>
          <DeliveriesPanel screen={screen} />
        </div>
        <div>
          <OwnerPanel page={page} screen={screen} canAct={canAct} />
          {canAct && !ownedElsewhere ? <ActionsPanel page={page} screen={screen} /> : null}
          {canAct && ownedElsewhere ? (
            <Panel title="Review" id="review">
              <p class="muted">Another analyst owns this case: only they, or an admin, decide on it.</p>
            </Panel>
          ) : null}
          <TagsPanel page={page} screen={screen} canAct={canAct} />
          <PendingPanel screen={screen} />
          {screen.featurePanels}
          <Panel title="Identifiers" id="ids">
            <dl class="kv small">
              <dt>Case id</dt>
              <dd class="mono">{r.caseId}</dd>
              <dt>Request id</dt>
              <dd class="mono">{r.requestId}</dd>
              <dt>Customer</dt>
              <dd>{r.externalCustomerId ?? "—"}</dd>
              <dt>Event time</dt>
              <dd>
                <Time iso={r.eventTimestamp} />
              </dd>
              <dt>Updated</dt>
              <dd>
                <Time iso={r.updatedAt} />
              </dd>
            </dl>
          </Panel>
        </div>
      </div>
    </Layout>
  );
}
