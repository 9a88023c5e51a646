import type { ComponentChildren } from "preact";
import type { ApiKeyView } from "../../auth/index.js";
import { SCOPES } from "../../auth/index.js";
import type { TagOptionView } from "../../tags/index.js";
import { can, ROLES, type UserView } from "../../users/index.js";
import type { DeliveryView, WebhookConfigView } from "../../webhooks/index.js";
import { Badge, Time } from "./components.js";
import { Csrf, Layout, Notice, type PageContext } from "./layout.js";

const SECTIONS = [
  { href: "/console/settings/api-keys", title: "API keys", permission: "apikeys:write" },
  { href: "/console/settings/tags", title: "Tags", permission: "tags:manage" },
  { href: "/console/settings/webhooks", title: "Webhooks", permission: "webhooks:manage" },
  { href: "/console/settings/providers", title: "Providers", permission: "webhooks:manage" },
  { href: "/console/settings/users", title: "Users", permission: "users:manage" },
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

function SettingsLayout({
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
      <div class="page-head">
        <div>
          <h1>Settings</h1>
          <p>{intro}</p>
        </div>
      </div>
      <nav class="tabs" aria-label="Settings">
        {SECTIONS.filter((s) => role && can(role, s.permission)).map((s) => (
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

function Secret({ id, title, value, note }: { id: string; title: string; value: string; note: string }) {
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

export function ApiKeysView({
  page,
  keys,
  created,
  notice,
}: {
  page: PageContext;
  keys: ApiKeyView[];
  created?: ApiKeyView & { key: string };
  notice?: string;
}) {
  return (
    <SettingsLayout
      page={page}
      title="API keys"
      intro="Keys your systems use to call the partner API."
      notice={notice}
    >
      {created ? (
        <Secret
          id="new-key"
          title={`New key “${created.name}”`}
          value={created.key}
          note="Copy the key now and store it safely: it is shown this once and cannot be recovered."
        />
      ) : null}
      <div class="grid grid-case">
        <section class="panel" aria-labelledby="keys-title">
          <h2 id="keys-title">Keys</h2>
          {keys.length === 0 ? (
            <p class="muted">No API keys yet.</p>
          ) : (
            <div class="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Key</th>
                    <th scope="col">Scopes</th>
                    <th scope="col">Last used</th>
                    <th scope="col" class="hide-narrow">
                      Created
                    </th>
                    <th scope="col">
                      <span class="skip">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {keys.map((k) => (
                    <tr>
                      <td>
                        <strong>{k.name}</strong>
                        {k.expiresAt ? (
                          <div class="small muted">
                            expires <Time iso={k.expiresAt} />
                          </div>
                        ) : null}
                      </td>
                      <td class="mono">{k.keyHint}</td>
                      <td class="small">{k.scopes.join(", ")}</td>
                      <td>{k.lastUsedAt ? <Time iso={k.lastUsedAt} /> : <span class="muted">never</span>}</td>
                      <td class="hide-narrow">
                        <Time iso={k.createdAt} />
                      </td>
                      <td>
                        <form
                          method="post"
                          action={`/console/settings/api-keys/${k.keyId}/delete`}
                          data-confirm={`Delete the key “${k.name}”? Systems using it stop working at once.`}
                        >
                          <Csrf page={page} />
                          <button type="submit" class="danger" aria-label={`Delete key ${k.name}`}>
                            Delete
                          </button>
                        </form>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </section>
        <section class="panel" aria-labelledby="new-key-title">
          <h2 id="new-key-title">Create a key</h2>
          <form method="post" action="/console/settings/api-keys" class="stack">
            <Csrf page={page} />
            <label class="field">
              Name <span class="hint">what uses it, e.g. “onboarding service”</span>
              <input type="text" name="name" required maxLength={200} />
            </label>
            <fieldset class="checks">
              <legend>Scopes</legend>
              {SCOPES.map((s) => (
                <label>
                  <input type="checkbox" name="scopes" value={s} /> {s}
                </label>
              ))}
            </fieldset>
            <label class="field">
              Expires (UTC) <span class="hint">optional</span>
              <input type="datetime-local" name="expiresAt" />
            </label>
            <button type="submit" class="primary">
              Create key
            </button>
          </form>
        </section>
      </div>
    </SettingsLayout>
  );
}

export function TagsView({
  page,
  options,
  notice,
}: {
  page: PageContext;
  options: TagOptionView[];
  notice?: string;
}) {
  return (
    <SettingsLayout
      page={page}
      title="Tags"
      intro="The tag vocabulary: the tags analysts and partners may put on cases. Disabling a tag stops new uses; cases keep the tags they carry."
      notice={notice}
    >
      <div class="grid grid-case">
        <section class="panel" aria-labelledby="tags-title">
          <h2 id="tags-title">Vocabulary</h2>
          {options.length === 0 ? (
            <p class="muted">No tags yet.</p>
          ) : (
            <div class="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Tag</th>
                    <th scope="col">State</th>
                    <th scope="col" class="hide-narrow">
                      Changed
                    </th>
                    <th scope="col">
                      <span class="skip">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {options.map((o) => (
                    <tr>
                      <td class="mono">{o.tag}</td>
                      <td>
                        <Badge value={o.enabled ? "enabled" : "disabled"} />
                      </td>
                      <td class="hide-narrow">
                        <Time iso={o.updatedAt} />
                      </td>
                      <td>
                        <form method="post" action="/console/settings/tags">
                          <Csrf page={page} />
                          <input type="hidden" name="tag" value={o.tag} />
                          <input type="hidden" name="enabled" value={o.enabled ? "false" : "true"} />
                          <button
                            type="submit"
                            aria-label={`${o.enabled ? "Disable" : "Enable"} tag ${o.tag}`}
                          >
                            {o.enabled ? "Disable" : "Enable"}
                          </button>
                        </form>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </section>
        <section class="panel" aria-labelledby="add-tag-title">
          <h2 id="add-tag-title">Add a tag</h2>
          <form method="post" action="/console/settings/tags" class="stack">
            <Csrf page={page} />
            <input type="hidden" name="enabled" value="true" />
            <label class="field">
              Tag <span class="hint">up to 64 characters, e.g. fraud-ring</span>
              <input type="text" name="tag" required maxLength={64} />
            </label>
            <button type="submit" class="primary">
              Add tag
            </button>
          </form>
        </section>
      </div>
    </SettingsLayout>
  );
}

export interface DeliveryLog {
  deliveries: DeliveryView[];
  nextCursor: string | null;
  status: string;
}

export function WebhooksView({
  page,
  configs,
  log,
  notice,
}: {
  page: PageContext;
  configs: WebhookConfigView[];
  log: DeliveryLog;
  notice?: string;
}) {
  return (
    <SettingsLayout
      page={page}
      title="Webhooks"
      intro="Where events about your cases are sent, signed with your secret, and every delivery attempt."
      notice={notice}
    >
      <div class="grid grid-case">
        <section class="panel" aria-labelledby="configs-title">
          <h2 id="configs-title">Endpoints</h2>
          {configs.length === 0 ? (
            <p class="muted">No endpoint is configured: events are recorded but not sent.</p>
          ) : (
            <div class="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Key</th>
                    <th scope="col">URL</th>
                    <th scope="col" class="hide-narrow">
                      Signing secret
                    </th>
                    <th scope="col" class="num hide-narrow">
                      Attempts
                    </th>
                    <th scope="col">
                      <span class="skip">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {configs.map((c) => (
                    <tr>
                      <td class="mono">{c.webhookKey}</td>
                      <td class="mono small">{c.url}</td>
                      <td class="hide-narrow mono">{c.activeSecretId ?? "—"}</td>
                      <td class="num hide-narrow">{c.maxAttempts}</td>
                      <td>
                        <div class="actions">
                          <form method="post" action={`/console/settings/webhooks/${c.webhookKey}/test`}>
                            <Csrf page={page} />
                            <button type="submit">Send a test event</button>
                          </form>
                          <form
                            method="post"
                            action={`/console/settings/webhooks/${c.webhookKey}/delete`}
                            data-confirm={`Delete the endpoint “${c.webhookKey}”?`}
                          >
                            <Csrf page={page} />
                            <button
                              type="submit"
                              class="danger"
                              aria-label={`Delete endpoint ${c.webhookKey}`}
                            >
                              Delete
                            </button>
                          </form>
                        </div>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </section>
        <section class="panel" aria-labelledby="webhook-form-title">
          <h2 id="webhook-form-title">Add or change an endpoint</h2>
          <form method="post" action="/console/settings/webhooks" class="stack">
            <Csrf page={page} />
            <label class="field">
              Key <span class="hint">“default” receives every event without a key of its own</span>
              <input
                type="text"
                name="webhookKey"
                required
                value="default"
                pattern="[A-Za-z0-9][A-Za-z0-9._\-]{0,63}"
              />
            </label>
            <label class="field">
              URL
              <input type="url" name="url" required placeholder="https://hooks.example.com/cds" />
            </label>
            <label class="field">
              Secret id <span class="hint">names the secret in the signature header</span>
              <input type="text" name="secretId" required value="s1" />
            </label>
            <label class="field">
              Secret <span class="hint">at least 16 characters; leave empty to keep the stored one</span>
              <input type="password" name="secret" autocomplete="off" />
            </label>
            <label class="field">
              Attempts <span class="hint">1 to 20</span>
              <input type="number" name="maxAttempts" min={1} max={20} value="5" />
            </label>
            <label class="field">
              Timeout (ms)
              <input type="number" name="timeoutMs" min={100} max={30000} value="10000" />
            </label>
            <button type="submit" class="primary">
              Save endpoint
            </button>
          </form>
        </section>
      </div>
      <section class="panel" aria-labelledby="log-title">
        <h2 id="log-title">Delivery log</h2>
        <form method="get" action="/console/settings/webhooks" class="filters">
          <label class="field">
            Status
            <select name="status">
              <option value="">Any</option>
              {["pending", "succeeded", "failed"].map((s) => (
                <option value={s} selected={s === log.status}>
                  {s}
                </option>
              ))}
            </select>
          </label>
          <button type="submit">Show</button>
        </form>
        {log.deliveries.length === 0 ? (
          <p class="muted">No deliveries.</p>
        ) : (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Event</th>
                  <th scope="col">Status</th>
                  <th scope="col" class="num">
                    Attempts
                  </th>
                  <th scope="col" class="hide-narrow">
                    Last answer
                  </th>
                  <th scope="col" class="hide-narrow">
                    Case
                  </th>
                  <th scope="col">Created</th>
                  <th scope="col">
                    <span class="skip">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {log.deliveries.map((d) => (
                  <tr>
                    <td>
                      <span class="mono">{d.eventType}</span>
                      <div class="small muted">to {d.webhookKey}</div>
                    </td>
                    <td>
                      <Badge value={d.status} />
                      {d.redeliveredAs ? <div class="small muted">redelivered</div> : null}
                    </td>
                    <td class="num">{d.attemptCount}</td>
                    <td class="hide-narrow small">
                      {d.lastStatusCode ? `HTTP ${d.lastStatusCode}` : ""} {d.lastError ?? ""}
                    </td>
                    <td class="hide-narrow">
                      {d.caseId ? (
                        <a class="mono" href={`/console/cases/${d.caseId}`}>
                          {d.caseId.slice(0, 8)}
                        </a>
                      ) : (
                        <span class="muted">—</span>
                      )}
                    </td>
                    <td>
                      <Time iso={d.createdAt} />
                    </td>
                    <td>
                      {d.status !== "pending" && !d.redeliveredAs ? (
                        <form
                          method="post"
                          action={`/console/settings/webhooks/deliveries/${d.deliveryId}/redeliver`}
                        >
                          <Csrf page={page} />
                          <button type="submit">Redeliver</button>
                        </form>
                      ) : null}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {log.nextCursor ? (
          <div class="pager">
            <span />
            <a
              class="button"
              href={`/console/settings/webhooks?${new URLSearchParams({ ...(log.status ? { status: log.status } : {}), cursor: log.nextCursor }).toString()}`}
            >
              Older deliveries
            </a>
          </div>
        ) : null}
      </section>
    </SettingsLayout>
  );
}

export interface ProviderRow {
  brokerId: string;
  baseUrl: string;
  configuredAt: string;
}

export function ProvidersView({ page, providers }: { page: PageContext; providers: ProviderRow[] }) {
  return (
    <SettingsLayout
      page={page}
      title="Providers"
      intro="Verification providers (identity verification, sanctions screening) your workflows call."
    >
      <section class="panel" aria-labelledby="providers-title">
        <h2 id="providers-title">Configured providers</h2>
        {providers.length === 0 ? (
          <p class="muted">No provider is configured for your team. Ask your operator to configure one.</p>
        ) : (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Provider</th>
                  <th scope="col">Base URL</th>
                  <th scope="col">Configured</th>
                </tr>
              </thead>
              <tbody>
                {providers.map((p) => (
                  <tr>
                    <td class="mono">{p.brokerId}</td>
                    <td class="mono small">{p.baseUrl}</td>
                    <td>
                      <Time iso={p.configuredAt} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </SettingsLayout>
  );
}

export function UsersView({
  page,
  users,
  created,
  notice,
}: {
  page: PageContext;
  users: UserView[];
  created?: { name: string; setupUrl: string };
  notice?: string;
}) {
  const self = page.session?.userId;
  return (
    <SettingsLayout
      page={page}
      title="Users"
      intro="Your team's console users. Viewers read cases; analysts also review them; admins also manage these settings."
      notice={notice}
    >
      {created ? (
        <Secret
          id="setup-link"
          title={`Setup link for ${created.name}`}
          value={created.setupUrl}
          note="Send this link to the user: it works once, for 7 days, and is shown this once."
        />
      ) : null}
      <div class="grid grid-case">
        <section class="panel" aria-labelledby="users-title">
          <h2 id="users-title">Users</h2>
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Role</th>
                  <th scope="col">State</th>
                  <th scope="col">
                    <span class="skip">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {users.map((u) => (
                  <tr>
                    <td>
                      <strong>{u.name}</strong>
                      <div class="small muted">{u.email}</div>
                    </td>
                    <td>
                      {u.userId === self ? (
                        u.role
                      ) : (
                        <form
                          method="post"
                          action={`/console/settings/users/${u.userId}/role`}
                          class="actions"
                        >
                          <Csrf page={page} />
                          <label>
                            <span class="skip">Role of {u.name}</span>
                            <select name="role">
                              {ROLES.map((r) => (
                                <option value={r} selected={r === u.role}>
                                  {r}
                                </option>
                              ))}
                            </select>
                          </label>
                          <button type="submit">Change</button>
                        </form>
                      )}
                    </td>
                    <td>
                      <Badge value={u.status} />
                    </td>
                    <td>
                      {u.userId === self ? (
                        <span class="muted small">you</span>
                      ) : (
                        <div class="actions">
                          <form method="post" action={`/console/settings/users/${u.userId}/setup-link`}>
                            <Csrf page={page} />
                            <button type="submit">New setup link</button>
                          </form>
                          <form
                            method="post"
                            action={`/console/settings/users/${u.userId}/delete`}
                            data-confirm={`Delete ${u.name}? They are signed out at once.`}
                          >
                            <Csrf page={page} />
                            <button type="submit" class="danger" aria-label={`Delete ${u.name}`}>
                              Delete
                            </button>
                          </form>
                        </div>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </section>
        <section class="panel" aria-labelledby="new-user-title">
          <h2 id="new-user-title">Add a user</h2>
          <form method="post" action="/console/settings/users" class="stack">
            <Csrf page={page} />
            <label class="field">
              Name
              <input type="text" name="name" required maxLength={200} />
            </label>
            <label class="field">
              Email <span class="hint">their sign-in name</span>
              <input type="email" name="email" required />
            </label>
            <label class="field">
              Role
              <select name="role">
                {ROLES.map((r) => (
                  <option value={r} selected={r === "analyst"}>
                    {r}
                  </option>
                ))}
              </select>
            </label>
            <button type="submit" class="primary">
              Add user
            </button>
          </form>
        </section>
      </div>
    </SettingsLayout>
  );
}
