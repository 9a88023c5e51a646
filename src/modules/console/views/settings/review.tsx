import { CASE_TYPES } from "../../../case-model/index.js";
import { SubmitButton } from "../components.js";
import { FormError, FormField, kept, type PageContext } from "../layout.js";
import { FormPanel, SettingsLayout } from "./layout.js";

/** Settings › Review deadlines: how many hours a case of each type may wait for review. */
export function ReviewSettingsView({
  page,
  slas,
  notice,
}: {
  page: PageContext;
  slas: ReadonlyMap<string, number>;
  notice?: string;
}) {
  return (
    <SettingsLayout
      page={page}
      title="Review deadlines"
      intro="How long a case of each type may wait for review. A case is due this many hours after it was created; overdue cases are marked in every list."
      notice={notice}
    >
      <FormPanel page={page} id="review-form" title="Deadlines, in hours" action="/console/settings/review">
        <FormError page={page} form="review" />
        {CASE_TYPES.map((type) => (
          <FormField
            page={page}
            form="review"
            field={type}
            label={type}
            hint="1 to 8760 hours; empty for no deadline"
          >
            <input
              type="number"
              name={type}
              min={1}
              max={8760}
              value={kept(page, "review", type, slas.has(type) ? String(slas.get(type)) : "")}
            />
          </FormField>
        ))}
        <SubmitButton>Save deadlines</SubmitButton>
      </FormPanel>
    </SettingsLayout>
  );
}
