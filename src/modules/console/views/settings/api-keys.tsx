import { type ApiKeyView, SCOPES } from "../../../auth/index.js";
import { Field, SubmitButton, Time, TimeCell } from "../components.js";
import type { PageContext } from "../layout.js";
import { ACTIONS, DeleteButton, FormPanel, Secret, SettingsLayout, TablePanel } from "./layout.js";

/** Settings › API keys: the tenant's keys, creating one (its value shown once), deleting one. */
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
        <TablePanel
          id="keys"
          title="Keys"
          rows={keys}
          empty="No API keys yet."
          columns={["Name", "Key", "Scopes", "Last used", { head: "Created", narrow: true }, ACTIONS]}
          row={(k) => (
            <>
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
              <TimeCell iso={k.createdAt} narrow />
              <td>
                <DeleteButton
                  page={page}
                  action={`/console/settings/api-keys/${k.keyId}/delete`}
                  confirm={`Delete the key “${k.name}”? Systems using it stop working at once.`}
                  what={`key ${k.name}`}
                />
              </td>
            </>
          )}
        />
        <FormPanel page={page} id="new-key" title="Create a key" action="/console/settings/api-keys">
          <Field label="Name" hint="what uses it, e.g. “onboarding service”">
            <input type="text" name="name" required maxLength={200} />
          </Field>
          <fieldset class="checks">
            <legend>Scopes</legend>
            {SCOPES.map((s) => (
              <label>
                <input type="checkbox" name="scopes" value={s} /> {s}
              </label>
            ))}
          </fieldset>
          <Field label="Expires (UTC)" hint="optional">
            <input type="datetime-local" name="expiresAt" />
          </Field>
          <SubmitButton>Create key</SubmitButton>
        </FormPanel>
      </div>
    </SettingsLayout>
  );
}
