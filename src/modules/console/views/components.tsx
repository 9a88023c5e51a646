import type { ComponentChildren } from "preact";

type Tone = "amber" | "blue" | "red" | "green" | "grey";

/** amber: a person must act; blue: waiting on something outside; red: refused or broken; green: approved. */
const STATUS_TONE: Record<string, Tone> = {
  received: "blue",
  running: "blue",
  waiting: "blue",
  in_review: "amber",
  decided: "grey",
  failed: "red",
  closed: "grey",
  approved: "green",
  declined: "red",
  pending: "amber",
  answered: "green",
  expired: "grey",
  cancelled: "grey",
  succeeded: "green",
  completed: "green",
  invited: "amber",
  active: "green",
  enabled: "green",
  disabled: "grey",
  match: "red",
  no_match: "green",
  not_reviewed: "amber",
  ok: "green",
  timed_out: "grey",
};

export function label(value: string): string {
  return value.replaceAll("_", " ");
}

export function Badge({ value, text }: { value: string; text?: string }) {
  return <span class={`badge badge-${STATUS_TONE[value] ?? "grey"}`}>{text ?? label(value)}</span>;
}

export function formatTime(iso: string | null | undefined, seconds = false): string {
  if (!iso) return "—";
  return `${iso.slice(0, 10)} ${iso.slice(11, seconds ? 19 : 16)} UTC`;
}

export function age(iso: string, now = Date.now()): string {
  const minutes = Math.max(0, Math.floor((now - new Date(iso).getTime()) / 60_000));
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h`;
  return `${Math.floor(hours / 24)} d`;
}

export function Time({ iso, seconds }: { iso: string | null | undefined; seconds?: boolean }) {
  if (!iso) return <span class="muted">—</span>;
  return <time datetime={iso}>{formatTime(iso, seconds)}</time>;
}

/** `analyst:<userId>` shown as the user's name where it is known. */
/**
 * An actor's name: a user's or an API key's from `names`, and for the operator API's
 * `operator:<actor>` the named user's (or the actor as given), marked as the operator's.
 */
export function actorName(actor: string, names: ReadonlyMap<string, string>): string | undefined {
  const name = names.get(actor);
  if (name || !actor.startsWith("operator:")) return name;
  const given = actor.slice("operator:".length);
  return `${names.get(`analyst:${given}`) ?? given} (operator API)`;
}

export function ActorName({ actor, names }: { actor: string | null; names: ReadonlyMap<string, string> }) {
  if (!actor) return <span class="muted">—</span>;
  const name = actorName(actor, names);
  return name ? (
    <span title={actor}>{name}</span>
  ) : (
    <span class="mono" title={actor}>
      {actor}
    </span>
  );
}

function scalar(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "string") return value;
  return JSON.stringify(value);
}

/** Nested JSON as a flat list of dotted paths: readable at a glance, every value escaped. */
export function flatten(
  value: unknown,
  prefix = "",
  out: Array<[string, string]> = [],
): Array<[string, string]> {
  if (value !== null && typeof value === "object") {
    const entries = Array.isArray(value)
      ? value.map((v, i) => [String(i), v] as const)
      : Object.entries(value as Record<string, unknown>);
    if (entries.length === 0) out.push([prefix || "(empty)", Array.isArray(value) ? "[]" : "{}"]);
    for (const [k, v] of entries) flatten(v, prefix ? `${prefix}.${k}` : k, out);
  } else {
    out.push([prefix || "(value)", scalar(value)]);
  }
  return out;
}

export function Fields({ value, empty = "Nothing recorded." }: { value: unknown; empty?: string }) {
  const rows = flatten(value);
  if (rows.length === 0 || (rows.length === 1 && rows[0]?.[1] === "{}")) return <p class="muted">{empty}</p>;
  return (
    <dl class="kv">
      {rows.map(([k, v]) => (
        <>
          <dt class="mono">{k}</dt>
          <dd>{v}</dd>
        </>
      ))}
    </dl>
  );
}

export function Panel({ title, id, children }: { title: string; id?: string; children: ComponentChildren }) {
  const headingId = id ? `${id}-title` : undefined;
  return (
    <section class="panel" id={id} aria-labelledby={headingId}>
      <h2 id={headingId}>{title}</h2>
      {children}
    </section>
  );
}

/** A column of a table: its head, and whether it holds numbers or hides on narrow screens. */
export interface Column {
  head: ComponentChildren;
  num?: boolean;
  narrow?: boolean;
}

/** The last column of a table, whose cells hold a row's buttons. */
export const ACTIONS: Column = { head: <span class="skip">Actions</span> };

/**
 * A table of rows, one `<tr>` each, or the `empty` line when there are none; `caption` is read
 * by screen readers only, and `keyboard` lets j/k move through the rows (console.js).
 */
export function DataTable<T>({
  rows,
  columns,
  row,
  empty,
  caption,
  keyboard,
}: {
  rows: readonly T[];
  /** Each a column, or the text of a plain column's head. */
  columns: Array<Column | string>;
  row: (item: T) => ComponentChildren;
  empty?: string;
  caption?: string;
  keyboard?: boolean;
}) {
  if (rows.length === 0 && empty !== undefined) return <p class="muted">{empty}</p>;
  return (
    <div class="table-wrap">
      <table data-keyboard={keyboard}>
        {caption === undefined ? null : <caption class="skip">{caption}</caption>}
        <thead>
          <tr>
            {columns.map((c) => {
              const { head, num, narrow }: Column = typeof c === "string" ? { head: c } : c;
              return (
                <th
                  scope="col"
                  class={[num ? "num" : "", narrow ? "hide-narrow" : ""].join(" ").trim() || undefined}
                >
                  {head}
                </th>
              );
            })}
          </tr>
        </thead>
        <tbody>
          {rows.map((item) => (
            <tr>{row(item)}</tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** A labelled form field: the label's text, an optional hint after it, then the control. */
export function Field({
  label,
  hint,
  children,
}: {
  label: string;
  hint?: string;
  children: ComponentChildren;
}) {
  return (
    // biome-ignore lint/a11y/noLabelWithoutControl: the control is the field's children
    <label class="field">
      {label}
      {hint === undefined ? null : (
        <>
          {" "}
          <span class="hint">{hint}</span>
        </>
      )}
      {children}
    </label>
  );
}

/** The `<option>`s of `values`, each shown as it is, with `selected` chosen. */
export function Options({ values, selected }: { values: readonly string[]; selected: string }) {
  return (
    <>
      {values.map((v) => (
        <option value={v} selected={v === selected}>
          {v}
        </option>
      ))}
    </>
  );
}

/** A filter's choice among `options` (value and text), or none (`any`, "Any" unless said). */
export function FilterSelect({
  name,
  title,
  value,
  options,
  any = "Any",
}: {
  name: string;
  title: string;
  value: string;
  options: Array<[string, string]>;
  any?: string;
}) {
  return (
    <Field label={title}>
      <select name={name}>
        <option value="">{any}</option>
        {options.map(([v, text]) => (
          <option value={v} selected={v === value}>
            {text}
          </option>
        ))}
      </select>
    </Field>
  );
}

/** The links to the first page (past it) and to the next one (when there is one), and their words. */
export function Pager({
  first,
  next,
  firstText = "First page",
  nextText = "Next page",
}: {
  first: string | undefined;
  next: string | undefined;
  firstText?: string;
  nextText?: string;
}) {
  return (
    <div class="pager">
      {first === undefined ? (
        <span />
      ) : (
        <a class="button" href={first}>
          {firstText}
        </a>
      )}
      {next === undefined ? null : (
        <a class="button" href={next} rel="next">
          {nextText}
        </a>
      )}
    </div>
  );
}

/** A form's main button. */
export function SubmitButton({ children }: { children: ComponentChildren }) {
  return (
    <button type="submit" class="primary">
      {children}
    </button>
  );
}

/** A table cell holding an id (or its start) as a link to its page. */
export function LinkCell({ href, children }: { href: string; children: ComponentChildren }) {
  return (
    <td>
      <a class="mono" href={href}>
        {children}
      </a>
    </td>
  );
}

/** A table cell holding a time; `narrow` hides it on narrow screens. */
export function TimeCell({ iso, narrow }: { iso: string | null | undefined; narrow?: boolean }) {
  return (
    <td class={narrow ? "hide-narrow" : undefined}>
      <Time iso={iso} />
    </td>
  );
}

/** One delivery attempt as the logs list it (the webhooks module's attempt view, in part). */
export interface AttemptLine {
  attempt: number;
  at: string;
  statusCode: number | null;
  latencyMs: number | null;
  error: string | null;
}

/** What an attempt got back, in one phrase: the HTTP status, and the error when it says more. */
export function attemptOutcome(a: AttemptLine): string {
  const status = a.statusCode === null ? null : `HTTP ${a.statusCode}`;
  if (status && a.error && a.error !== status) return `${status}: ${a.error}`;
  return status ?? a.error ?? "no answer";
}

/** Every attempt of a delivery: when it started, how long it took, what it got back. */
export function Attempts({ attempts }: { attempts: readonly AttemptLine[] }) {
  if (attempts.length === 0) return <span class="small muted">not attempted yet</span>;
  return (
    <ol class="attempts small">
      {attempts.map((a) => (
        <li>
          <span class="muted">#{a.attempt}</span> <Time iso={a.at} seconds /> ·{" "}
          {a.latencyMs === null ? "—" : `${a.latencyMs} ms`} · {attemptOutcome(a)}
        </li>
      ))}
    </ol>
  );
}
