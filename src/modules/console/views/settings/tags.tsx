import type { TagOptionView } from "../../../tags/index.js";
import { Badge, Field, SubmitButton, TimeCell } from "../components.js";
import type { PageContext } from "../layout.js";
import { ACTIONS, FormPanel, PostButton, SettingsLayout, TablePanel } from "./layout.js";

/** Settings › Tags: the tag vocabulary, enabling and disabling a tag, adding one. */
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
        <TablePanel
          id="tags"
          title="Vocabulary"
          rows={options}
          empty="No tags yet."
          columns={["Tag", "State", { head: "Changed", narrow: true }, ACTIONS]}
          row={(o) => (
            <>
              <td class="mono">{o.tag}</td>
              <td>
                <Badge value={o.enabled ? "enabled" : "disabled"} />
              </td>
              <TimeCell iso={o.updatedAt} narrow />
              <td>
                <PostButton
                  page={page}
                  action="/console/settings/tags"
                  fields={{ tag: o.tag, enabled: o.enabled ? "false" : "true" }}
                  label={o.enabled ? "Disable" : "Enable"}
                  ariaLabel={`${o.enabled ? "Disable" : "Enable"} tag ${o.tag}`}
                />
              </td>
            </>
          )}
        />
        <FormPanel page={page} id="add-tag" title="Add a tag" action="/console/settings/tags">
          <input type="hidden" name="enabled" value="true" />
          <Field label="Tag" hint="up to 64 characters, e.g. fraud-ring">
            <input type="text" name="tag" required maxLength={64} />
          </Field>
          <SubmitButton>Add tag</SubmitButton>
        </FormPanel>
      </div>
    </SettingsLayout>
  );
}
