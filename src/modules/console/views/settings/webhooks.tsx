import type { DeliveryView, WebhookConfigView } from "../../../webhooks/index.js";
import { Attempts, Badge, FilterSelect, SubmitButton, Time } from "../components.js";
import { FormError, FormField, kept, type PageContext } from "../layout.js";
import { ACTIONS, DataTable, DeleteButton, FormPanel, Panel, PostButton, SettingsLayout } from "./layout.js";

/** A page of the delivery log, with the status it is filtered by. */
export interface DeliveryLog {
  deliveries: DeliveryView[];
  nextCursor: string | null;
  status: string;
}

/** Settings › Webhooks: the endpoints, adding or changing one, a test event, the delivery log. */
export function WebhooksView({
  page,
  configs,
  editing,
  log,
  notice,
}: {
  page: PageContext;
  configs: WebhookConfigView[];
  /** The endpoint whose settings the form starts from (`?edit=<key>`). */
  editing?: WebhookConfigView;
  log: DeliveryLog;
  notice?: string;
}) {
  const value = (field: string, current: string) => kept(page, "webhook", field, current);
  return (
    <SettingsLayout
      page={page}
      title="Webhooks"
      intro="Where events about your cases are sent, signed with your secret, and every delivery attempt."
      notice={notice}
    >
      <div class="grid grid-case">
        <Panel id="configs" title="Endpoints">
          <DataTable
            rows={configs}
            empty="No endpoint is configured: events are recorded but not sent."
            columns={[
              "Key",
              "URL",
              { head: "Signing secret", narrow: true },
              { head: "Attempts", num: true, narrow: true },
              ACTIONS,
            ]}
            row={(c) => (
              <>
                <td class="mono">{c.webhookKey}</td>
                <td class="mono small">{c.url}</td>
                <td class="hide-narrow mono">{c.activeSecretId ?? "—"}</td>
                <td class="num hide-narrow">{c.maxAttempts}</td>
                <td>
                  <div class="actions">
                    <a
                      class="button"
                      href={`/console/settings/webhooks?edit=${encodeURIComponent(c.webhookKey)}#webhook-form`}
                    >
                      Edit<span class="skip"> endpoint {c.webhookKey}</span>
                    </a>
                    <PostButton
                      page={page}
                      action={`/console/settings/webhooks/${c.webhookKey}/test`}
                      label="Send a test event"
                    />
                    <DeleteButton
                      page={page}
                      action={`/console/settings/webhooks/${c.webhookKey}/delete`}
                      confirm={`Delete the endpoint “${c.webhookKey}”?`}
                      what={`endpoint ${c.webhookKey}`}
                    />
                  </div>
                </td>
              </>
            )}
          />
        </Panel>
        <FormPanel
          page={page}
          id="webhook-form"
          title={editing ? `Change the endpoint “${editing.webhookKey}”` : "Add or change an endpoint"}
          action="/console/settings/webhooks"
        >
          <FormError page={page} form="webhook" />
          <FormField
            page={page}
            form="webhook"
            field="webhookKey"
            label="Key"
            hint="“default” receives every event without a key of its own"
          >
            <input
              type="text"
              name="webhookKey"
              required
              value={value("webhookKey", editing?.webhookKey ?? "default")}
              pattern="[A-Za-z0-9][A-Za-z0-9._\-]{0,63}"
            />
          </FormField>
          <FormField page={page} form="webhook" field="url" label="URL">
            <input
              type="url"
              name="url"
              required
              placeholder="https://hooks.example.com/cds"
              value={value("url", editing?.url ?? "")}
            />
          </FormField>
          <FormField
            page={page}
            form="webhook"
            field="secretId"
            label="Secret id"
            hint="optional: names the secret in the signature header; leave it and the secret empty to keep the stored ones"
          >
            <input type="text" name="secretId" value={value("secretId", "")} />
          </FormField>
          <FormField
            page={page}
            form="webhook"
            field="secret"
            label="Secret"
            hint={
              editing
                ? "at least 16 characters; leave empty to keep the stored one"
                : "at least 16 characters"
            }
          >
            <input type="password" name="secret" autocomplete="off" />
          </FormField>
          <FormField page={page} form="webhook" field="maxAttempts" label="Attempts" hint="1 to 20">
            <input
              type="number"
              name="maxAttempts"
              min={1}
              max={20}
              value={value("maxAttempts", String(editing?.maxAttempts ?? 5))}
            />
          </FormField>
          <FormField page={page} form="webhook" field="timeoutMs" label="Timeout (ms)">
            <input
              type="number"
              name="timeoutMs"
              min={100}
              max={30000}
              value={value("timeoutMs", String(editing?.timeoutMs ?? 10000))}
            />
          </FormField>
          <SubmitButton>Save endpoint</SubmitButton>
        </FormPanel>
      </div>
      <Panel id="log" title="Delivery log">
        <form method="get" action="/console/settings/webhooks" class="filters">
          <FilterSelect
            name="status"
            title="Status"
            value={log.status}
            options={["pending", "succeeded", "failed"].map((s) => [s, s])}
          />
          <button type="submit">Show</button>
        </form>
        <DataTable
          rows={log.deliveries}
          empty="No deliveries."
          columns={[
            "Event",
            "Status",
            "Attempts (time, duration, answer)",
            { head: "Case", narrow: true },
            "Created",
            ACTIONS,
          ]}
          row={(d) => (
            <>
              <td>
                <span class="mono">{d.eventType}</span>
                <div class="small muted">to {d.webhookKey}</div>
              </td>
              <td>
                <Badge value={d.status} />
                {d.redeliveredAs ? <div class="small muted">redelivered</div> : null}
              </td>
              <td>
                <Attempts attempts={d.attempts} />
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
                  <PostButton
                    page={page}
                    action={`/console/settings/webhooks/deliveries/${d.deliveryId}/redeliver`}
                    label="Redeliver"
                  />
                ) : null}
              </td>
            </>
          )}
        />
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
      </Panel>
    </SettingsLayout>
  );
}
