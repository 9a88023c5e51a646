import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { badRequest } from "../../platform/errors.js";
import {
  ACTIONS,
  type ConsoleSection,
  DataTable,
  DeleteButton,
  Field,
  FormPanel,
  formOf,
  LinkCell,
  Options,
  type PageContext,
  Panel,
  PostButton,
  pageOf,
  SettingsLayout,
  SubmitButton,
  sendPage,
  sessionOf,
  settingsAction,
  Time,
} from "../console/index.js";
import type { Permission } from "../users/index.js";
import { VALUES_BODY_LIMIT } from "./lists.routes.js";
import {
  changeListValues,
  getList,
  getLists,
  getListValues,
  LIST_LIMITS,
  type ListView,
  NORMALIZE_RULES,
  putList,
  removeList,
} from "./lists.service.js";

const config = { console: { permission: "lists:manage" as Permission } };
const HOME = "/console/settings/lists";
const INTRO =
  "Named lists of values (blocked IBANs, allowed countries) that workflows read with inList. A change applies to every case step that starts after it.";

const NOTICES: Record<string, string> = {
  "list-saved": "The list was saved.",
  "values-changed": "The values were changed.",
  uploaded: "The file's values were applied.",
  "list-deleted": "The list and its values were deleted.",
};

type ListParams = { Params: { listId: string } };
type PageQuery = { Querystring: { done?: string; prefix?: string; cursor?: string } };

const pathOf = (listId: string) => `${HOME}/${encodeURIComponent(listId)}`;

function RuleSelect({ value }: { value: string }) {
  return (
    <Field label="Normalise values as" hint="the rule applies to every value added and looked up">
      <select name="normalize">
        <Options values={NORMALIZE_RULES} selected={value} />
      </select>
    </Field>
  );
}

function ListsPage({ page, lists, notice }: { page: PageContext; lists: ListView[]; notice?: string }) {
  return (
    <SettingsLayout page={page} title="Lists" intro={INTRO} notice={notice}>
      <div class="grid grid-case">
        <Panel id="lists" title="Lists">
          <DataTable
            caption="The tenant's lists"
            rows={lists}
            empty="No lists yet."
            columns={[
              "List",
              "Description",
              "Rule",
              { head: "Values", num: true },
              { head: "Changed", narrow: true },
            ]}
            row={(l) => (
              <>
                <LinkCell href={pathOf(l.listId)}>{l.listId}</LinkCell>
                <td>{l.description}</td>
                <td class="mono">{l.normalize}</td>
                <td class="num">{l.valueCount}</td>
                <td class="hide-narrow">
                  <Time iso={l.updatedAt} />
                </td>
              </>
            )}
          />
        </Panel>
        <FormPanel page={page} id="add-list" title="Create a list" action={HOME}>
          <Field label="List id" hint="a–z, digits and _, starting with a letter, e.g. blocked_ibans">
            <input type="text" name="listId" required maxLength={64} pattern="[a-z][a-z0-9_]{0,63}" />
          </Field>
          <Field label="Description">
            <input type="text" name="description" maxLength={LIST_LIMITS.descriptionLength} />
          </Field>
          <RuleSelect value="none" />
          <SubmitButton>Create list</SubmitButton>
        </FormPanel>
      </div>
    </SettingsLayout>
  );
}

function ListPage({
  page,
  list,
  values,
  prefix,
  nextCursor,
  notice,
}: {
  page: PageContext;
  list: ListView;
  values: string[];
  prefix: string;
  nextCursor: string | null;
  notice?: string;
}) {
  const path = pathOf(list.listId);
  const next = nextCursor ? `${path}?${new URLSearchParams({ prefix, cursor: nextCursor })}` : undefined;
  return (
    <SettingsLayout page={page} title={`List ${list.listId}`} intro={INTRO} notice={notice}>
      <p class="small">
        <a href={HOME}>Lists</a> › <span class="mono">{list.listId}</span> · {list.valueCount}{" "}
        {list.valueCount === 1 ? "value" : "values"} · normalised as{" "}
        <span class="mono">{list.normalize}</span>
      </p>
      <div class="grid grid-case">
        <Panel id="values" title="Values">
          <form method="get" action={path} class="stack">
            <Field label="Starting with">
              <input type="search" name="prefix" value={prefix} maxLength={LIST_LIMITS.valueLength} />
            </Field>
            <button type="submit">Search</button>
          </form>
          <DataTable
            caption={`Values of ${list.listId}`}
            rows={values}
            empty={prefix ? "No value starts with this." : "The list is empty."}
            columns={["Value", ACTIONS]}
            row={(v) => (
              <>
                <td class="mono">{v}</td>
                <td>
                  <PostButton
                    page={page}
                    action={`${path}/values`}
                    fields={{ remove: v }}
                    label="Remove"
                    ariaLabel={`Remove ${v}`}
                  />
                </td>
              </>
            )}
          />
          {next ? (
            <p>
              <a href={next} rel="next">
                Next values
              </a>
            </p>
          ) : null}
        </Panel>
        <div>
          <FormPanel page={page} id="change-values" title="Add or remove values" action={`${path}/values`}>
            <Field label="Add" hint="one value a line">
              <textarea name="add" rows={4} />
            </Field>
            <Field label="Remove" hint="one value a line">
              <textarea name="remove" rows={2} />
            </Field>
            <SubmitButton>Apply</SubmitButton>
          </FormPanel>
          <Panel id="upload" title="Upload a file">
            <form
              method="post"
              action={`${path}/upload`}
              class="stack"
              data-lines-upload={`${path}/upload`}
              data-lines-chunk={String(LIST_LIMITS.valuesPerCall)}
              data-lines-done={`${path}?done=uploaded`}
            >
              <Field
                label="File"
                hint={`text, one value a line; sent in parts of ${LIST_LIMITS.valuesPerCall}`}
              >
                <input type="file" name="file" accept=".txt,.csv,text/plain" required />
              </Field>
              <Field label="The file's values are to be">
                <select name="mode">
                  <option value="add">added</option>
                  <option value="remove">removed</option>
                </select>
              </Field>
              <SubmitButton>Upload</SubmitButton>
              <p class="small" data-upload-status role="status" />
            </form>
          </Panel>
          <FormPanel page={page} id="edit-list" title="Description and rule" action={HOME}>
            <input type="hidden" name="listId" value={list.listId} />
            <Field label="Description">
              <input
                type="text"
                name="description"
                value={list.description}
                maxLength={LIST_LIMITS.descriptionLength}
              />
            </Field>
            <RuleSelect value={list.normalize} />
            <button type="submit">Save</button>
          </FormPanel>
          <Panel id="delete-list" title="Delete">
            <p class="small">Refused while a published workflow version reads the list.</p>
            <DeleteButton
              page={page}
              action={`${path}/delete`}
              confirm={`Delete the list ${list.listId} and its ${list.valueCount} values?`}
              what={`list ${list.listId}`}
            />
          </Panel>
        </div>
      </div>
    </SettingsLayout>
  );
}

/** The values of a textarea, one a line (a trailing carriage return dropped, empty lines skipped). */
const lines = (text: string) => text.split(/\r?\n/).filter((line) => line.trim() !== "");

function listsRoutes(scope: App, ctx: AppContext): void {
  scope.get<PageQuery>("/settings/lists", { config }, async (request, reply) => {
    const { tenantId } = sessionOf(request);
    const { lists } = await getLists(ctx, tenantId);
    const notice = request.query.done ? NOTICES[request.query.done] : undefined;
    return sendPage(reply, <ListsPage page={pageOf(request, reply)} lists={lists} notice={notice} />);
  });

  scope.get<ListParams & PageQuery>("/settings/lists/:listId", { config }, async (request, reply) => {
    const { tenantId } = sessionOf(request);
    const { listId } = request.params;
    const prefix = request.query.prefix ?? "";
    const [list, page] = await Promise.all([
      getList(ctx, tenantId, listId),
      getListValues(ctx, tenantId, listId, {
        ...(prefix ? { prefix } : {}),
        ...(request.query.cursor ? { cursor: request.query.cursor } : {}),
        limit: 50,
      }),
    ]);
    const notice = request.query.done ? NOTICES[request.query.done] : undefined;
    return sendPage(
      reply,
      <ListPage
        page={pageOf(request, reply)}
        list={list}
        values={page.values}
        prefix={prefix}
        nextCursor={page.nextCursor}
        notice={notice}
      />,
    );
  });

  scope.post(HOME.replace("/console", ""), { config }, async (request, reply) => {
    const session = sessionOf(request);
    const form = formOf(request);
    const listId = form.text("listId");
    await putList(
      ctx,
      session.tenantId,
      listId,
      { description: form.text("description"), normalize: form.text("normalize") || "none" },
      session.actor,
    );
    return reply.redirect(`${pathOf(listId)}?done=list-saved`, 303);
  });

  scope.post<ListParams>("/settings/lists/:listId/values", { config }, async (request, reply) => {
    const session = sessionOf(request);
    const form = formOf(request);
    const { listId } = request.params;
    await changeListValues(
      ctx,
      session.tenantId,
      listId,
      { add: form.list("add").flatMap(lines), remove: form.list("remove").flatMap(lines) },
      session.actor,
    );
    return reply.redirect(`${pathOf(listId)}?done=values-changed`, 303);
  });

  // One part of an uploaded file, sent by the page's script as JSON: {add} or {remove}. (No
  // schema: the console answers its errors as {error}, not as the API's error body.)
  scope.post<ListParams>(
    "/settings/lists/:listId/upload",
    { config: { console: { ...config.console, json: true } }, bodyLimit: VALUES_BODY_LIMIT },
    async (request) => {
      const session = sessionOf(request);
      const body = request.body as Record<string, unknown> | null;
      const strings = (v: unknown): v is string[] | undefined =>
        v === undefined || (Array.isArray(v) && v.every((s) => typeof s === "string"));
      if (typeof body !== "object" || body === null || !strings(body.add) || !strings(body.remove)) {
        throw badRequest("send {add: [values]} or {remove: [values]}");
      }
      const change = { add: body.add ?? [], remove: body.remove ?? [] };
      return changeListValues(ctx, session.tenantId, request.params.listId, change, session.actor);
    },
  );

  settingsAction<{ listId: string }>(
    scope,
    "/settings/lists/:listId/delete",
    config,
    `${HOME}?done=list-deleted`,
    async (session, { params: { listId } }) => removeList(ctx, session.tenantId, listId, session.actor),
  );
}

/** Settings › Lists: the tenant's lists, their values, a file upload (permission `lists:manage`). */
export const listsConsole: ConsoleSection = {
  links: [{ href: HOME, title: "Lists", permission: "lists:manage", place: "settings" }],
  routes: listsRoutes,
};
