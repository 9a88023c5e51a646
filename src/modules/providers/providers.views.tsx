import type { ComponentChildren } from "preact";
import {
  ActorName,
  Badge,
  type CaseView,
  Csrf,
  Field,
  FieldError,
  FormError,
  FormField,
  kept,
  label,
  Panel,
  SubmitButton,
  Time,
} from "../console/index.js";
import type { ActionRunView, OfferedAction } from "./actions.service.js";
import type { ScreeningHit } from "./broker.js";
import type { RunResultView } from "./case-results.service.js";
import type { CaseScreenings, ReviewView, Screening } from "./screening.service.js";

// What a case page shows of its providers: each screening hit beside the subject with the
// analysts' verdicts, identity checks in words, and the providers' actions as buttons.

type Json = Record<string, unknown>;

const obj = (v: unknown): Json =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Json) : {};
const str = (v: unknown): string => (typeof v === "string" ? v.trim() : "");

/** The subject's facts a hit is compared with. */
function subjectFacts(subject: Json): { name: string; birthDate: string; nationality: string } {
  const person = obj(subject.person);
  const business = obj(subject.business);
  if (subject.person) {
    const name = [str(person.firstName), str(person.lastName)].filter(Boolean).join(" ");
    return {
      name: name || str(subject.displayName),
      birthDate: str(person.dateOfBirth),
      nationality: str(person.nationality).toLowerCase(),
    };
  }
  return {
    name: str(business.legalName) || str(subject.displayName),
    birthDate: "",
    nationality: str(business.country).toLowerCase(),
  };
}

/** The id of a hit's form: the refused form's problems come back under it. */
export function hitForm(brokerId: string, hitId: string): string {
  return `hit-${brokerId}-${hitId}`.replace(/[^A-Za-z0-9_-]/g, "_");
}

function Compared({ subject, hit, same }: { subject: string; hit: string; same?: boolean }) {
  return (
    <>
      <td>{subject || <span class="muted">—</span>}</td>
      <td>
        {hit || <span class="muted">—</span>}
        {same === undefined || !subject || !hit ? null : (
          <span class="small muted">{same ? " (same)" : " (differs)"}</span>
        )}
      </td>
    </>
  );
}

function VerdictLine({ verdict, view, caseId }: { verdict: ReviewView; view: CaseView; caseId: string }) {
  return (
    <p>
      <Badge value={verdict.verdict} /> by <ActorName actor={verdict.actor} names={view.names} />,{" "}
      <Time iso={verdict.at} />: “{verdict.reason}”
      {verdict.caseId === caseId ? null : (
        <span class="small muted">
          {" "}
          (on <a href={`/console/cases/${verdict.caseId}`}>another case</a> of the same subject)
        </span>
      )}
    </p>
  );
}

function HitCard({
  hit,
  screening,
  screenings,
  view,
  caseId,
  canReview,
}: {
  hit: ScreeningHit;
  screening: Screening;
  screenings: CaseScreenings;
  view: CaseView;
  caseId: string;
  canReview: boolean;
}) {
  const { page } = view;
  const form = hitForm(screening.brokerId, hit.id);
  const verdict = screenings.verdicts.get(`${screening.brokerId}/${hit.id}`);
  const subject = subjectFacts(screenings.subject);
  const nationalities = hit.nationalities.length > 0 ? hit.nationalities : hit.countries;
  return (
    <article class="hit" id={form} aria-label={`Hit: ${hit.name}`}>
      <header>
        <strong>{hit.name}</strong> <span class="mono small">{hit.id}</span>{" "}
        {verdict ? <Badge value={verdict.verdict} /> : <Badge value="not_reviewed" />}{" "}
        <span class="small muted">
          score {hit.score}
          {hit.aboveThreshold ? ", at or above the threshold" : ", below the threshold"}
        </span>
      </header>
      <div class="table-wrap">
        <table>
          <caption class="skip">{`${hit.name} beside the case's subject`}</caption>
          <thead>
            <tr>
              <th scope="col" />
              <th scope="col">Subject</th>
              <th scope="col">Hit</th>
            </tr>
          </thead>
          <tbody>
            <tr>
              <th scope="row">Name</th>
              <Compared subject={subject.name} hit={hit.name} />
            </tr>
            <tr>
              <th scope="row">Birth date</th>
              <Compared
                subject={subject.birthDate}
                hit={hit.birthDates.join(", ")}
                same={hit.birthDates.includes(subject.birthDate)}
              />
            </tr>
            <tr>
              <th scope="row">{hit.nationalities.length > 0 ? "Nationality" : "Country"}</th>
              <Compared
                subject={subject.nationality.toUpperCase()}
                hit={nationalities.join(", ").toUpperCase()}
                same={nationalities.includes(subject.nationality)}
              />
            </tr>
            <tr>
              <th scope="row">Datasets</th>
              <td class="muted">—</td>
              <td>{hit.datasets.join(", ") || <span class="muted">—</span>}</td>
            </tr>
          </tbody>
        </table>
      </div>
      {verdict ? <VerdictLine verdict={verdict} view={view} caseId={caseId} /> : null}
      {canReview ? (
        <details open={page.problem?.form === form}>
          <summary>{verdict ? "Change the verdict" : "Review this hit"}</summary>
          <form method="post" action={`/console/cases/${caseId}/screening`} class="stack">
            <Csrf page={page} />
            <input type="hidden" name="brokerId" value={screening.brokerId} />
            <input type="hidden" name="hitId" value={hit.id} />
            <FormError page={page} form={form} />
            <fieldset class="checks">
              <legend>Is this hit the case's subject?</legend>
              {(["match", "no_match"] as const).map((v) => (
                <label>
                  <input type="radio" name="verdict" value={v} checked={kept(page, form, "verdict") === v} />{" "}
                  {v === "match" ? "Match: it is the subject" : "No match: it is someone else"}
                </label>
              ))}
              <FieldError page={page} form={form} field="verdict" />
            </fieldset>
            <FormField
              page={page}
              form={form}
              field="reason"
              label="Reason"
              hint="required; kept in the audit log"
            >
              <textarea name="reason" required maxLength={2000} value={kept(page, form, "reason")} />
            </FormField>
            <SubmitButton>Record the verdict</SubmitButton>
          </form>
        </details>
      ) : null}
    </article>
  );
}

/** Each screening's hits beside the subject, with the verdicts that hold and the form to give one. */
export function ScreeningPanel({
  screenings,
  view,
  caseId,
  canReview,
}: {
  screenings: CaseScreenings;
  view: CaseView;
  caseId: string;
  canReview: boolean;
}) {
  return (
    <Panel title="Screening review" id="screening">
      {screenings.entityIds.length === 0 ? (
        <p class="small muted">
          The subject has no customer id or identifier: verdicts hold for this case only.
        </p>
      ) : (
        <p class="small muted">
          A hit marked “no match” is remembered for this customer: a rescreen or a later case of theirs
          reports it under <span class="mono">dismissedHits</span>, not <span class="mono">results</span>.
        </p>
      )}
      {screenings.latest.map((screening) => (
        <section aria-label={`Screening by ${screening.brokerId}`}>
          <h3>
            {screening.brokerId}: {screening.hits.length} result{screening.hits.length === 1 ? "" : "s"}
          </h3>
          <p class="small muted">
            {screening.by.startsWith("node:") ? (
              <>
                by the workflow's node <span class="mono">{screening.by.slice(5)}</span>
              </>
            ) : (
              <>
                rescreened by <ActorName actor={screening.by} names={view.names} />
              </>
            )}
            , <Time iso={screening.at} />
          </p>
          {screening.hits.length === 0 ? <p class="muted">No hit.</p> : null}
          {screening.hits.map((hit) => (
            <HitCard
              hit={hit}
              screening={screening}
              screenings={screenings}
              view={view}
              caseId={caseId}
              canReview={canReview}
            />
          ))}
        </section>
      ))}
      {screenings.history.length > 0 ? (
        <details>
          <summary class="small">Every verdict on this subject ({screenings.history.length})</summary>
          <ul class="small">
            {screenings.history.map((r) => (
              <li>
                <Time iso={r.at} /> <ActorName actor={r.actor} names={view.names} /> marked{" "}
                <strong>{r.name}</strong> <Badge value={r.verdict} />: “{r.reason}”
              </li>
            ))}
          </ul>
        </details>
      ) : null}
    </Panel>
  );
}

/** Identity checks in words: the review's answer, its rejection labels, the applicant. */
export function IdentityPanel({ results }: { results: RunResultView[] }) {
  return (
    <Panel title="Identity verification" id="identity">
      {results.map((r) => (
        <div class="identity">
          <p>
            <Badge value={r.words.status} /> {r.words.summary}
          </p>
          <dl class="kv small">
            {r.words.facts.map((f) => (
              <>
                <dt>{f.label}</dt>
                <dd>{f.value}</dd>
              </>
            ))}
            <dt>Node</dt>
            <dd class="mono">{r.nodeId}</dd>
            <dt>Updated</dt>
            <dd>
              <Time iso={r.at} />
            </dd>
          </dl>
          {r.words.link ? (
            <p class="small">
              <a href={r.words.link.href} rel="noreferrer noopener" target="_blank">
                {r.words.link.text}
              </a>
            </p>
          ) : null}
        </div>
      ))}
    </Panel>
  );
}

/** The action's parameters a form can ask for: its top-level strings and integers. */
function paramFields(schema: Json): Array<{ name: string; required: boolean; integer: boolean }> {
  const required = Array.isArray(schema.required) ? schema.required : [];
  return Object.entries(obj(schema.properties)).flatMap(([name, raw]) => {
    const type = obj(raw).type;
    if (type !== "string" && type !== "integer") return [];
    return [{ name, required: required.includes(name), integer: type === "integer" }];
  });
}

function ActionForm({ action, view, caseId }: { action: OfferedAction; view: CaseView; caseId: string }) {
  const fields = paramFields(action.paramsSchema);
  const form = (
    <form
      method="post"
      action={`/console/cases/${caseId}/provider-actions`}
      class={fields.length ? "stack" : ""}
    >
      <Csrf page={view.page} />
      <input type="hidden" name="kind" value={action.kind} />
      <input type="hidden" name="brokerId" value={action.brokerId} />
      <input type="hidden" name="actionId" value={action.id} />
      {action.handle ? <input type="hidden" name="handle" value={action.handle} /> : null}
      {fields.map((f) => (
        <Field label={f.name} hint={f.required ? undefined : "optional"}>
          {f.integer ? (
            <input type="number" step={1} name={`param.${f.name}`} required={f.required} />
          ) : (
            <input type="text" name={`param.${f.name}`} required={f.required} />
          )}
        </Field>
      ))}
      <button type="submit">{action.label}</button>
    </form>
  );
  return fields.length === 0 ? (
    form
  ) : (
    <details>
      <summary>{action.label}</summary>
      {form}
    </details>
  );
}

/** A heading, then a form for each of its actions; nothing when there are none. */
function ActionGroup({
  title,
  actions,
  view,
  caseId,
}: {
  title: ComponentChildren;
  actions: OfferedAction[];
  view: CaseView;
  caseId: string;
}) {
  if (actions.length === 0) return null;
  return (
    <>
      <h3>{title}</h3>
      <div class="stack">
        {actions.map((a) => (
          <ActionForm action={a} view={view} caseId={caseId} />
        ))}
      </div>
    </>
  );
}

/** The providers' actions as buttons (a paused node's, then the durable ones) and those run so far. */
export function ActionsPanel({
  offered,
  recent,
  view,
  caseId,
  canAct,
  refusal,
}: {
  offered: OfferedAction[];
  recent: ActionRunView[];
  view: CaseView;
  caseId: string;
  canAct: boolean;
  /** Why no button is drawn, when the user could otherwise act (a dry run's case, another's). */
  refusal?: string;
}) {
  const pending = offered.filter((a) => a.kind === "pending");
  const durable = offered.filter((a) => a.kind === "durable");
  return (
    <Panel title="Provider actions" id="provider-actions">
      {!canAct && refusal && offered.length > 0 ? <p class="small muted">{refusal}</p> : null}
      {canAct ? (
        <ActionGroup
          title={
            <>
              While <span class="mono">{pending[0]?.nodeId}</span> waits on {pending[0]?.brokerId}
            </>
          }
          actions={pending}
          view={view}
          caseId={caseId}
        />
      ) : null}
      {canAct ? <ActionGroup title="Any time" actions={durable} view={view} caseId={caseId} /> : null}
      {recent.length > 0 ? (
        <>
          <h3>Run so far</h3>
          <ul class="small">
            {recent.map((r) => (
              <li>
                <Time iso={r.at} /> {r.label} <span class="muted">({r.brokerId})</span> by{" "}
                <ActorName actor={r.actor} names={view.names} /> <Badge value={r.outcome} />
                {r.error ? <span class="muted"> {r.error}</span> : null}
              </li>
            ))}
          </ul>
        </>
      ) : (
        <p class="small muted">No provider action has been run on this case.</p>
      )}
    </Panel>
  );
}

/** What an action gave, in words, above the case page's panels. */
export function ActionResult({
  label: title,
  outcome,
  message,
  output,
  kept,
}: {
  label: string;
  outcome: "ok" | "failed";
  message?: string;
  output?: Json;
  /** Whether the service keeps the output (a rescreen's hits), or shows it this once (a link). */
  kept?: boolean;
}) {
  // A screening's output: its hits at or above the threshold, and how many nobody reviewed.
  const unreviewed = typeof output?.unreviewedHits === "number" ? output.unreviewedHits : undefined;
  const threshold = typeof output?.threshold === "number" ? output.threshold : 0;
  const hits =
    unreviewed !== undefined && Array.isArray(output?.results)
      ? output.results.map(obj).filter((h) => typeof h.score === "number" && h.score >= threshold)
      : undefined;
  const dismissed = Array.isArray(output?.dismissedHits) ? output.dismissedHits.length : 0;
  return (
    <section class={`notice notice-${outcome === "ok" ? "ok" : "error"}`} id="action-result" role="status">
      <h2>
        {title}: {outcome === "ok" ? "done" : "failed"}
      </h2>
      {message ? <p>{message}</p> : null}
      {hits ? (
        <p>
          {unreviewed === 0
            ? "No hit left to review: every hit at or above the threshold has a verdict for this subject, or there is none."
            : `${unreviewed} hit${unreviewed === 1 ? "" : "s"} to review.`}{" "}
          {hits.length > 0
            ? `At or above the threshold: ${hits.map((h) => `${str(h.caption)} (${String(h.score)})`).join(", ")}.`
            : ""}{" "}
          {dismissed > 0
            ? `${dismissed} hit${dismissed === 1 ? "" : "s"} marked “no match” for this subject earlier: dismissed.`
            : ""}
        </p>
      ) : null}
      {output && !hits ? (
        <dl class="kv">
          {Object.entries(output).map(([k, v]) => (
            <>
              <dt>{label(k)}</dt>
              <dd class="mono">{typeof v === "string" ? v : JSON.stringify(v)}</dd>
            </>
          ))}
        </dl>
      ) : null}
      {output && !kept ? <p class="small muted">Shown once: the service does not keep this answer.</p> : null}
    </section>
  );
}
