import type { CaseScreen } from "../case.service.js";
import { ActorName, Field, Panel, SubmitButton, Time } from "./components.js";
import { Csrf, FormError, FormField, kept, type PageContext } from "./layout.js";

/** Who owns the case and when its review is due; take, release, or (an admin) assign it. */
export function OwnerPanel({
  page,
  screen,
  canAct,
}: {
  page: PageContext;
  screen: CaseScreen;
  canAct: boolean;
}) {
  const { work, record } = screen;
  const me = page.session?.userId;
  const admin = page.session?.role === "admin";
  const owner = work.users.find((u) => u.userId === work.assigneeId);
  const action = `/console/cases/${record.caseId}/assign`;
  return (
    <Panel title="Owner" id="owner">
      <p>
        {work.assigneeId === null ? (
          <span class="muted">Nobody owns this case.</span>
        ) : work.assigneeId === me ? (
          <strong>You own this case.</strong>
        ) : (
          <>
            Owned by <strong>{owner?.name ?? "a former user"}</strong>.
          </>
        )}
      </p>
      <p class={work.overdue ? "overdue" : undefined}>
        Review due:{" "}
        {work.dueAt ? (
          <>
            <Time iso={work.dueAt} />
            {work.overdue ? " (overdue)" : ""}
          </>
        ) : (
          <span class="muted">no deadline</span>
        )}
      </p>
      {canAct ? (
        <div class="actions">
          {work.assigneeId !== me && (work.assigneeId === null || admin) ? (
            <form method="post" action={action}>
              <Csrf page={page} />
              <input type="hidden" name="assignee" value={me} />
              <SubmitButton>Take it</SubmitButton>
            </form>
          ) : null}
          {work.assigneeId !== null && (work.assigneeId === me || admin) ? (
            <form method="post" action={action}>
              <Csrf page={page} />
              <input type="hidden" name="assignee" value="" />
              <button type="submit">Release it</button>
            </form>
          ) : null}
          {admin ? (
            <form method="post" action={action} class="actions">
              <Csrf page={page} />
              <Field label="Assign to">
                <select name="assignee" required>
                  <option value="">Choose…</option>
                  {work.users.map((u) => (
                    <option value={u.userId} selected={u.userId === work.assigneeId}>
                      {u.name}
                    </option>
                  ))}
                </select>
              </Field>
              <button type="submit">Assign</button>
            </form>
          ) : null}
        </div>
      ) : null}
    </Panel>
  );
}

/** The internal comment thread: between the tenant's users only, never shown to the partner. */
export function CommentsPanel({
  page,
  screen,
  canComment,
}: {
  page: PageContext;
  screen: CaseScreen;
  canComment: boolean;
}) {
  const { comments } = screen.work;
  return (
    <Panel title="Internal comments" id="comments">
      <p class="small muted">Seen by your team only: never sent to the partner, recorded in the audit log.</p>
      {comments.length === 0 ? <p class="muted">No comments yet.</p> : null}
      <ol class="comments">
        {comments.map((c) => (
          <li>
            <div class="small">
              <strong>
                <ActorName actor={c.author} names={screen.names} />
              </strong>{" "}
              <Time iso={c.createdAt} />
            </div>
            <div class="comment-body">{c.body}</div>
          </li>
        ))}
      </ol>
      {canComment ? (
        <form method="post" action={`/console/cases/${screen.record.caseId}/comments`} class="stack">
          <Csrf page={page} />
          <FormError page={page} form="comment" />
          <FormField page={page} form="comment" field="body" label="Add a comment">
            <textarea name="body" required maxLength={4000} value={kept(page, "comment", "body")} />
          </FormField>
          <button type="submit">Comment</button>
        </form>
      ) : null}
    </Panel>
  );
}
