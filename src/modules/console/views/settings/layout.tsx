import type { ComponentChildren } from "preact";
import { can } from "../../../users/index.js";
import { DataTable } from "../components.js";
import { Csrf, Layout, Notice, type PageContext, PageHead } from "../layout.js";

export { ACTIONS, DataTable } from "../components.js";

const SECTIONS = [
  { href: "/console/settings/api-keys", title: "API keys", permission: "apikeys:write" },
  { href: "/console/settings/tags", title: "Tags", permission: "tags:manage" },
  { href: "/console/settings/webhooks", title: "Webhooks", permission: "webhooks:manage" },
  { href: "/console/settings/users", title: "Users", permission: "users:manage" },
  { href: "/console/settings/review", title: "Review deadlines", permission: "users:manage" },
] as const;

export const SETTINGS_NOTICES: Record<string, string> = {
  "key-deleted": "The API key was deleted: it stops working with the next request.",
  "tag-saved": "The tag vocabulary was updated.",
  "webhook-saved": "The webhook configuration was saved.",
  "webhook-deleted": "The webhook configuration was deleted.",
  redelivered: "The event was queued for delivery again, with a fresh webhookId.",
  "test-sent": "A webhook.test event was queued; it appears in the delivery log below.",
  "role-changed": "The role was changed; the user's sessions have ended.",
  "user-deleted": "The user was deleted and signed out everywhere.",
};

/** A settings page: the heading, the tabs the user may open, a notice, then the page. */
export function SettingsLayout({
  page,
  title,
  intro,
  notice,
  children,
}: {
  page: PageContext;
  title: string;
  intro: string;
  notice?: string;
  children: ComponentChildren;
}) {
  const role = page.session?.role;
  return (
    <Layout page={page} title={title}>
      <PageHead title="Settings">
        <p>{intro}</p>
      </PageHead>
      <nav class="tabs" aria-label="Settings">
        {[...SECTIONS, ...page.links.filter((l) => l.place === "settings")]
          .filter((s) => role && can(role, s.permission))
          .map((s) => (
            <a href={s.href} aria-current={page.path === s.href ? "page" : undefined}>
              {s.title}
            </a>
          ))}
      </nav>
      {notice ? <Notice kind="ok">{notice}</Notice> : null}
      {children}
    </Layout>
  );
}

/** A value shown once (a new key, a setup link), with a button that copies it. */
export function Secret({
  id,
  title,
  value,
  note,
}: {
  id: string;
  title: string;
  value: string;
  note: string;
}) {
  return (
    <section class="panel" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{title}</h2>
      <p>{note}</p>
      <div class="secret">
        <code id={id}>{value}</code>
        <button type="button" data-copy={id}>
          Copy
        </button>
      </div>
    </section>
  );
}

/** A titled panel of a settings page; its heading's id is `<id>-title`. */
export function Panel({ id, title, children }: { id: string; title: string; children: ComponentChildren }) {
  return (
    <section class="panel" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{title}</h2>
      {children}
    </section>
  );
}

/** A titled panel holding one table of rows (or its `empty` line). */
export function TablePanel<T>({
  id,
  title,
  ...table
}: { id: string; title: string } & Parameters<typeof DataTable<T>>[0]) {
  return (
    <Panel id={id} title={title}>
      <DataTable {...table} />
    </Panel>
  );
}

/** A one-button form that posts to `action` (with the CSRF token and any hidden fields). */
export function PostButton({
  page,
  action,
  label,
  ariaLabel,
  confirm,
  danger,
  fields,
}: {
  page: PageContext;
  action: string;
  label: string;
  ariaLabel?: string;
  confirm?: string;
  danger?: boolean;
  fields?: Record<string, string>;
}) {
  return (
    <form method="post" action={action} data-confirm={confirm}>
      <Csrf page={page} />
      {Object.entries(fields ?? {}).map(([name, value]) => (
        <input type="hidden" name={name} value={value} />
      ))}
      <button type="submit" class={danger ? "danger" : undefined} aria-label={ariaLabel}>
        {label}
      </button>
    </form>
  );
}

/** The red Delete button of a row, which asks `confirm` first; `what` names the row for screen readers. */
export function DeleteButton({
  page,
  action,
  confirm,
  what,
}: {
  page: PageContext;
  action: string;
  confirm: string;
  what: string;
}) {
  return (
    <PostButton
      page={page}
      action={action}
      confirm={confirm}
      danger
      label="Delete"
      ariaLabel={`Delete ${what}`}
    />
  );
}

/** A panel holding one form that posts to `action`, with the CSRF token. */
export function FormPanel({
  page,
  id,
  title,
  action,
  children,
}: {
  page: PageContext;
  id: string;
  title: string;
  action: string;
  children: ComponentChildren;
}) {
  return (
    <Panel id={id} title={title}>
      <form method="post" action={action} class="stack">
        <Csrf page={page} />
        {children}
      </form>
    </Panel>
  );
}
