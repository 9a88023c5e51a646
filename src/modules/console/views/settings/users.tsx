import type { ComponentChildren } from "preact";
import { ROLES, type UserView } from "../../../users/index.js";
import { Badge, Field, Options, SubmitButton } from "../components.js";
import { Csrf, type PageContext } from "../layout.js";
import {
  ACTIONS,
  DeleteButton,
  FormPanel,
  PostButton,
  Secret,
  SettingsLayout,
  TablePanel,
} from "./layout.js";

/** The labelled role picker of the user forms, with `selected` chosen. */
function RoleField({
  selected,
  field,
  children,
}: {
  selected: string;
  field?: boolean;
  children: ComponentChildren;
}) {
  return (
    <label class={field ? "field" : undefined}>
      {children}
      <select name="role">
        <Options values={ROLES} selected={selected} />
      </select>
    </label>
  );
}

/** Settings › Users: the team's console users, their roles, setup links, adding and deleting one. */
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
        <TablePanel
          id="users"
          title="Users"
          rows={users}
          columns={["Name", "Role", "State", ACTIONS]}
          row={(u) => (
            <>
              <td>
                <strong>{u.name}</strong>
                <div class="small muted">{u.email}</div>
              </td>
              <td>
                {u.userId === self ? (
                  u.role
                ) : (
                  <form method="post" action={`/console/settings/users/${u.userId}/role`} class="actions">
                    <Csrf page={page} />
                    <RoleField selected={u.role}>
                      <span class="skip">Role of {u.name}</span>
                    </RoleField>
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
                    <PostButton
                      page={page}
                      action={`/console/settings/users/${u.userId}/setup-link`}
                      label="New setup link"
                    />
                    <DeleteButton
                      page={page}
                      action={`/console/settings/users/${u.userId}/delete`}
                      confirm={`Delete ${u.name}? They are signed out at once.`}
                      what={`${u.name}`}
                    />
                  </div>
                )}
              </td>
            </>
          )}
        />
        <FormPanel page={page} id="new-user" title="Add a user" action="/console/settings/users">
          <Field label="Name">
            <input type="text" name="name" required maxLength={200} />
          </Field>
          <Field label="Email" hint="their sign-in name">
            <input type="email" name="email" required />
          </Field>
          <RoleField selected="analyst" field>
            Role
          </RoleField>
          <SubmitButton>Add user</SubmitButton>
        </FormPanel>
      </div>
    </SettingsLayout>
  );
}
