import type { FastifyReply, FastifyRequest } from "fastify";
import type { VNode } from "preact";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { AppError, badRequest } from "../../platform/errors.js";
import { apiKeyAudit, createApiKey, getApiKeys, removeApiKey } from "../auth/index.js";
import { getTagOptions, setTagOption, tagOptionAudit } from "../tags/index.js";
import {
  audited,
  changeRole,
  createUser,
  getUser,
  getUsers,
  type Permission,
  removeUser,
  renewSetupLink,
} from "../users/index.js";
import {
  getDeliveries,
  getDelivery,
  getWebhookConfigs,
  putWebhookConfig,
  redeliver,
  removeWebhookConfig,
  sendTestEvent,
  webhookAudit,
} from "../webhooks/index.js";
import { pageOf, problemOf, seeOther, sendPage, sessionOf } from "./console.plugin.js";
import { formOf } from "./form.js";
import type { FormProblem, PageContext } from "./views/layout.js";
import { ApiKeysView } from "./views/settings/api-keys.js";
import { SETTINGS_NOTICES } from "./views/settings/layout.js";
import { TagsView } from "./views/settings/tags.js";
import { UsersView } from "./views/settings/users.js";
import { WebhooksView } from "./views/settings/webhooks.js";

type Done = { Querystring: { done?: string } };
type Config = typeof keys;
type Session = ReturnType<typeof sessionOf>;

const keys = { console: { permission: "apikeys:write" as Permission } };
const tags = { console: { permission: "tags:manage" as Permission } };
const hooks = { console: { permission: "webhooks:manage" as Permission } };
const users = { console: { permission: "users:manage" as Permission } };

/** A settings page: what it shows of the signed-in user's tenant, with the notice of `?done=`. */
function settingsPage(
  scope: App,
  path: string,
  config: Config,
  render: (page: PageContext, tenantId: string, notice: string | undefined) => Promise<VNode>,
): void {
  scope.get<Done>(path, { config }, async (request, reply) =>
    sendPage(
      reply,
      await render(pageOf(request, reply), sessionOf(request).tenantId, noticeOf(request.query.done)),
    ),
  );
}

/** A form post of a settings page: acts for the signed-in user, then sends the browser to `back`. */
export function settingsAction<P extends Record<string, string>>(
  scope: App,
  path: string,
  config: Config,
  back: string,
  act: (session: Session, request: FastifyRequest<{ Params: P }>) => Promise<unknown>,
): void {
  scope.post<{ Params: P }>(path, { config }, async (request, reply) => {
    await act(sessionOf(request), request);
    return seeOther(reply, back);
  });
}

const noticeOf = (done: string | undefined) => (done ? SETTINGS_NOTICES[done] : undefined);

function utcInput(value: string, what: string): string | undefined {
  if (!value) return undefined;
  if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d)?$/.test(value)) throw badRequest(`${what} is not a date and time`);
  return `${value.length === 16 ? `${value}:00` : value}Z`;
}

function positiveInt(value: string, field: string): number | undefined {
  if (value === "") return undefined;
  if (!/^\d{1,9}$/.test(value))
    throw badRequest(`${field} must be a whole number`, [{ path: field, message: "must be a whole number" }]);
  return Number(value);
}

/** Settings: API keys, the tag vocabulary, webhooks with their delivery log, users (a feature's own settings pages come through the console seam). */
export function settingsRoutes(scope: App, ctx: AppContext): void {
  scope.get("/settings", { config: { console: { permission: "users:manage" } } }, async (_request, reply) =>
    seeOther(reply, "/console/settings/api-keys"),
  );

  settingsPage(scope, "/settings/api-keys", keys, async (page, tenantId, notice) => (
    <ApiKeysView page={page} keys={await getApiKeys(ctx, tenantId)} notice={notice} />
  ));

  scope.post("/settings/api-keys", { config: keys }, async (request, reply) => {
    const session = sessionOf(request);
    const form = formOf(request);
    const created = await createApiKey(
      ctx,
      session.tenantId,
      {
        name: form.text("name"),
        scopes: form.list("scopes"),
        expiresAt: utcInput(form.text("expiresAt"), "the expiry") ?? null,
      },
      apiKeyAudit.create(session),
    );
    // The value is in this answer only: never in a URL, a log or a later page.
    const list = await getApiKeys(ctx, session.tenantId);
    return sendPage(reply, <ApiKeysView page={pageOf(request, reply)} keys={list} created={created} />, 201);
  });

  settingsAction<{ keyId: string }>(
    scope,
    "/settings/api-keys/:keyId/delete",
    keys,
    "/console/settings/api-keys?done=key-deleted",
    async (session, { params: { keyId } }) => {
      await removeApiKey(ctx, session.tenantId, keyId, apiKeyAudit.delete(session, keyId));
    },
  );

  settingsPage(scope, "/settings/tags", tags, async (page, tenantId, notice) => (
    <TagsView page={page} options={await getTagOptions(ctx, tenantId)} notice={notice} />
  ));

  settingsAction(
    scope,
    "/settings/tags",
    tags,
    "/console/settings/tags?done=tag-saved",
    async (session, request) => {
      const form = formOf(request);
      const tag = form.raw("tag");
      const enabled = form.text("enabled") !== "false";
      await setTagOption(ctx, session.tenantId, tag, enabled, tagOptionAudit(session, tag));
    },
  );

  type WebhooksQuery = { done?: string; status?: string; cursor?: string; edit?: string };
  /** Settings › Webhooks, with the endpoint being edited, or a refused form's problems (400). */
  const webhooksPage = async (
    request: FastifyRequest,
    reply: FastifyReply,
    query: WebhooksQuery,
    problem?: FormProblem,
  ) => {
    const { tenantId } = sessionOf(request);
    const status = query.status || undefined;
    const [configs, log] = await Promise.all([
      getWebhookConfigs(ctx, tenantId),
      getDeliveries(ctx, tenantId, { status, cursor: query.cursor || undefined, limit: 25 }),
    ]);
    const page = { ...pageOf(request, reply), path: "/console/settings/webhooks", problem };
    return sendPage(
      reply,
      <WebhooksView
        page={page}
        configs={configs}
        editing={configs.find((c) => c.webhookKey === query.edit)}
        log={{ ...log, status: status ?? "" }}
        notice={noticeOf(query.done)}
      />,
      problem ? 400 : 200,
    );
  };

  scope.get<{ Querystring: WebhooksQuery }>("/settings/webhooks", { config: hooks }, (request, reply) =>
    webhooksPage(request, reply, request.query),
  );

  scope.post("/settings/webhooks", { config: hooks }, async (request, reply) => {
    const session = sessionOf(request);
    const form = formOf(request);
    const webhookKey = form.text("webhookKey");
    const secretId = form.text("secretId");
    const secret = form.raw("secret");
    // Neither a secret nor its id: the endpoint keeps the secrets it has (a new URL alone).
    const secrets = secret
      ? [secretId ? { id: secretId, secret } : { secret }]
      : secretId
        ? [{ id: secretId }]
        : undefined;
    try {
      await putWebhookConfig(
        ctx,
        session.tenantId,
        webhookKey,
        {
          url: form.text("url"),
          ...(secrets ? { secrets, activeSecretId: secretId || null } : {}),
          maxAttempts: positiveInt(form.text("maxAttempts"), "maxAttempts"),
          timeoutMs: positiveInt(form.text("timeoutMs"), "timeoutMs"),
        },
        webhookAudit.set(session, webhookKey),
      );
    } catch (error) {
      const values = Object.fromEntries(
        ["webhookKey", "url", "secretId", "maxAttempts", "timeoutMs"].map((f) => [f, form.text(f)]),
      );
      const problem = problemOf(error, "webhook", values, (path) =>
        path.endsWith(".id") || path === "activeSecretId"
          ? "secretId"
          : path.startsWith("secrets")
            ? "secret"
            : path,
      );
      return webhooksPage(request, reply, {}, problem);
    }
    return seeOther(reply, "/console/settings/webhooks?done=webhook-saved");
  });

  settingsAction<{ webhookKey: string }>(
    scope,
    "/settings/webhooks/:webhookKey/delete",
    hooks,
    "/console/settings/webhooks?done=webhook-deleted",
    async (session, { params: { webhookKey } }) => {
      await removeWebhookConfig(ctx, session.tenantId, webhookKey, webhookAudit.delete(session, webhookKey));
    },
  );

  settingsAction<{ webhookKey: string }>(
    scope,
    "/settings/webhooks/:webhookKey/test",
    hooks,
    "/console/settings/webhooks?done=test-sent",
    async (session, { params: { webhookKey } }) => {
      await sendTestEvent(
        ctx,
        session.tenantId,
        webhookKey,
        audited(session, "webhook.test", `webhook:${webhookKey}`, (eventId) => ({ after: { eventId } })),
      );
    },
  );

  settingsAction<{ deliveryId: string }>(
    scope,
    "/settings/webhooks/deliveries/:deliveryId/redeliver",
    hooks,
    "/console/settings/webhooks?done=redelivered",
    async (session, { params: { deliveryId } }) => {
      const original = await getDelivery(ctx, deliveryId).catch((err: unknown) => {
        if (err instanceof AppError && err.status === 404) return undefined;
        throw err;
      });
      if (!original || original.tenantId !== session.tenantId)
        throw new AppError("not_found", "webhook delivery not found");
      await redeliver(
        ctx,
        deliveryId,
        webhookAudit.redeliver(() => session, deliveryId),
      );
    },
  );

  settingsPage(scope, "/settings/users", users, async (page, tenantId, notice) => (
    <UsersView page={page} users={await getUsers(ctx, tenantId)} notice={notice} />
  ));

  /** The users page with a setup link shown once (a new user's, or a renewed one). */
  const withSetupLink = async (
    page: PageContext,
    tenantId: string,
    created: { name: string; setupUrl: string },
  ) => (
    <UsersView
      page={page}
      users={await getUsers(ctx, tenantId)}
      created={{ name: created.name, setupUrl: created.setupUrl }}
    />
  );

  scope.post("/settings/users", { config: users }, async (request, reply) => {
    const session = sessionOf(request);
    const form = formOf(request);
    const created = await createUser(
      ctx,
      session.tenantId,
      { email: form.text("email"), name: form.text("name"), role: form.text("role") },
      session.actor,
    );
    return sendPage(reply, await withSetupLink(pageOf(request, reply), session.tenantId, created), 201);
  });

  const notSelf = (userId: string, session: { userId: string }) => {
    if (userId === session.userId) {
      throw new AppError("conflict", "You cannot change or delete your own account; ask another admin.");
    }
  };

  settingsAction<{ userId: string }>(
    scope,
    "/settings/users/:userId/role",
    users,
    "/console/settings/users?done=role-changed",
    async (session, request) => {
      notSelf(request.params.userId, session);
      await changeRole(
        ctx,
        session.tenantId,
        request.params.userId,
        formOf(request).text("role"),
        session.actor,
      );
    },
  );

  scope.post<{ Params: { userId: string } }>(
    "/settings/users/:userId/setup-link",
    { config: users },
    async (request, reply) => {
      const session = sessionOf(request);
      notSelf(request.params.userId, session);
      const renewed = await renewSetupLink(ctx, session.tenantId, request.params.userId, session.actor);
      return sendPage(reply, await withSetupLink(pageOf(request, reply), session.tenantId, renewed));
    },
  );

  settingsAction<{ userId: string }>(
    scope,
    "/settings/users/:userId/delete",
    users,
    "/console/settings/users?done=user-deleted",
    async (session, { params: { userId } }) => {
      notSelf(userId, session);
      await getUser(ctx, session.tenantId, userId);
      await removeUser(ctx, session.tenantId, userId, session.actor);
    },
  );
}
