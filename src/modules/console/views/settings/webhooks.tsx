import type { DeliveryView, WebhookConfigView } from "../../../webhooks/index.js";
import { Badge, Field, SubmitButton, TimeCell } from "../components.js";
import type { PageContext } from "../layout.js";
import {
  ACTIONS,
  DataTable,
  DeleteButton,
  FormPanel,
  Panel,
  PostButton,
  SettingsLayout,
  TablePanel,
} from "./layout.js";

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
        <TablePanel
          id="configs"
          title="Endpoints"
          rows={configs}
          empty="No endpoint is configured: events are recorded but not sent."
          columns={[
            { head: "Key" },
            { head: "URL" },
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
        <FormPanel
          page={page}
          id="webhook-form"
          title="Add or change an endpoint"
          action="/console/settings/webhooks"
        >
          <Field label="Key" hint="“default” receives every event without a key of its own">
            <input
              type="text"
              name="webhookKey"
              required
              value="default"
              pattern="[A-Za-z0-9][A-Za-z0-9._\-]{0,63}"
            />
          </Field>
          <Field label="URL">
            <input type="url" name="url" required placeholder="https://hooks.example.com/cds" />
          </Field>
          <Field label="Secret id" hint="names the secret in the signature header">
            <input type="text" name="secretId" required value="s1" />
          </Field>
          <Field label="Secret" hint="at least 16 characters; leave empty to keep the stored one">
            <input type="password" name="secret" autocomplete="off" />
          </Field>
          <Field label="Attempts" hint="1 to 20">
            <input type="number" name="maxAttempts" min={1} max={20} value="5" />
          </Field>
          <Field label="Timeout (ms)">
            <input type="number" name="timeoutMs" min={100} max={30000} value="10000" />
          </Field>
          <SubmitButton>Save endpoint</SubmitButton>
        </FormPanel>
      </div>
      <Panel id="log" title="Delivery log">
        <form method="get" action="/console/settings/webhooks" class="filters">
          <Field label="Status">
            <select name="status">
              <option value="">Any</option>
              {["pending", "succeeded", "failed"].map((s) => (
                <option value={s} selected={s === log.status}>
                  {s}
                </option>
              ))}
            </select>
          </Field>
          <button type="submit">Show</button>
        </form>
        <DataTable
          rows={log.deliveries}
          empty="No deliveries."
          columns={[
            { head: "Event" },
            { head: "Status" },
            { head: "Attempts", num: true },
            { head: "Last answer", narrow: true },
            { head: "Case", narrow: true },
            { head: "Created" },
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
              <TimeCell iso={d.createdAt} />
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
