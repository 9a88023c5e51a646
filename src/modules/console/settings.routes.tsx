import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { AppError, badRequest } from "../../platform/errors.js";
import { createApiKey, getApiKeys, removeApiKey } from "../auth/index.js";
import { getTagOptions, setTagOption } from "../tags/index.js";
import { changeRole, createUser, getUser, getUsers, removeUser, renewSetupLink } from "../users/index.js";
import {
  getDeliveries,
  getDelivery,
  getWebhookConfigs,
  putWebhookConfig,
  redeliver,
  removeWebhookConfig,
  sendTestEvent,
} from "../webhooks/index.js";
import { audit } from "./audit.js";
import { pageOf, seeOther, sendPage, sessionOf } from "./console.plugin.js";
import { formOf } from "./form.js";
import { listProviders } from "./providers.js";
import { ApiKeysView } from "./views/settings/api-keys.js";
import { SETTINGS_NOTICES } from "./views/settings/layout.js";
import { ProvidersView } from "./views/settings/providers.js";
import { TagsView } from "./views/settings/tags.js";
import { UsersView } from "./views/settings/users.js";
import { WebhooksView } from "./views/settings/webhooks.js";

type Done = { Querystring: { done?: string } };

const keys = { console: { permission: "apikeys:write" as const } };
const tags = { console: { permission: "tags:manage" as const } };
const hooks = { console: { permission: "webhooks:manage" as const } };
const users = { console: { permission: "users:manage" as const } };

const noticeOf = (done: string | undefined) => (done ? SETTINGS_NOTICES[done] : undefined);

function utcInput(value: string, what: string): string | undefined {
  if (!value) return undefined;
  if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d)?$/.test(value)) throw badRequest(`${what} is not a date and time`);
  return `${value.length === 16 ? `${value}:00` : value}Z`;
}

function positiveInt(value: string, what: string): number | undefined {
  if (value === "") return undefined;
  if (!/^\d{1,9}$/.test(value)) throw badRequest(`${what} must be a whole number`);
  return Number(value);
}

/** Settings: API keys, the tag vocabulary, webhooks with their delivery log, providers, users. */
export function settingsRoutes(scope: App, ctx: AppContext): void {
  scope.get("/settings", { config: { console: { permission: "users:manage" } } }, async (_request, reply) =>
    seeOther(reply, "/console/settings/api-keys"),
  );

  scope.get<Done>("/settings/api-keys", { config: keys }, async (request, reply) => {
    const list = await getApiKeys(ctx, sessionOf(request).tenantId);
    return sendPage(
      reply,
      <ApiKeysView page={pageOf(request, reply)} keys={list} notice={noticeOf(request.query.done)} />,
    );
  });

  scope.post("/settings/api-keys", { config: keys }, async (request, reply) => {
    const session = sessionOf(request);
    const form = formOf(request);
    const created = await createApiKey(ctx, session.tenantId, {
      name: form.text("name"),
      scopes: form.list("scopes"),
      expiresAt: utcInput(form.text("expiresAt"), "the expiry") ?? null,
    });
    const { key: _shownOnce, ...recorded } = created;
    await audit(ctx, session, "apikey.create", `apikey:${created.keyId}`, { after: recorded });
    // The value is in this answer only: never in a URL, a log or a later page.
    const list = await getApiKeys(ctx, session.tenantId);
    return sendPage(reply, <ApiKeysView page={pageOf(request, reply)} keys={list} created={created} />, 201);
  });

  scope.post<{ Params: { keyId: string } }>(
    "/settings/api-keys/:keyId/delete",
    { config: keys },
    async (request, reply) => {
      const session = sessionOf(request);
      const before = (await getApiKeys(ctx, session.tenantId)).find((k) => k.keyId === request.params.keyId);
      await removeApiKey(ctx, session.tenantId, request.params.keyId);
      await audit(ctx, session, "apikey.delete", `apikey:${request.params.keyId}`, { before });
      return seeOther(reply, "/console/settings/api-keys?done=key-deleted");
    },
  );

  scope.get<Done>("/settings/tags", { config: tags }, async (request, reply) => {
    const options = await getTagOptions(ctx, sessionOf(request).tenantId);
    return sendPage(
      reply,
      <TagsView page={pageOf(request, reply)} options={options} notice={noticeOf(request.query.done)} />,
    );
  });

  scope.post("/settings/tags", { config: tags }, async (request, reply) => {
    const session = sessionOf(request);
    const form = formOf(request);
    const tag = form.raw("tag");
    const enabled = form.text("enabled") !== "false";
    const before = (await getTagOptions(ctx, session.tenantId)).find((o) => o.tag === tag);
    const after = await setTagOption(ctx, session.tenantId, tag, enabled);
    await audit(ctx, session, "tag_option.set", `tag:${tag}`, {
      before: before ? { enabled: before.enabled } : undefined,
      after: { enabled: after.enabled },
    });
    return seeOther(reply, "/console/settings/tags?done=tag-saved");
  });

  scope.get<{ Querystring: { done?: string; status?: string; cursor?: string } }>(
    "/settings/webhooks",
    { config: hooks },
    async (request, reply) => {
      const { tenantId } = sessionOf(request);
      const status = request.query.status || undefined;
      const [configs, log] = await Promise.all([
        getWebhookConfigs(ctx, tenantId),
        getDeliveries(ctx, tenantId, { status, cursor: request.query.cursor || undefined, limit: 25 }),
      ]);
      return sendPage(
        reply,
        <WebhooksView
          page={pageOf(request, reply)}
          configs={configs}
          log={{ ...log, status: status ?? "" }}
          notice={noticeOf(request.query.done)}
        />,
      );
    },
  );

  scope.post("/settings/webhooks", { config: hooks }, async (request, reply) => {
    const session = sessionOf(request);
    const form = formOf(request);
    const webhookKey = form.text("webhookKey");
    const secretId = form.text("secretId");
    const secret = form.raw("secret");
    const before = (await getWebhookConfigs(ctx, session.tenantId)).find((c) => c.webhookKey === webhookKey);
    const after = await putWebhookConfig(ctx, session.tenantId, webhookKey, {
      url: form.text("url"),
      secrets: [secret ? { id: secretId, secret } : { id: secretId }],
      activeSecretId: secretId,
      maxAttempts: positiveInt(form.text("maxAttempts"), "attempts"),
      timeoutMs: positiveInt(form.text("timeoutMs"), "the timeout"),
    });
    await audit(ctx, session, "webhook.set", `webhook:${webhookKey}`, { before, after });
    return seeOther(reply, "/console/settings/webhooks?done=webhook-saved");
  });

  scope.post<{ Params: { webhookKey: string } }>(
    "/settings/webhooks/:webhookKey/delete",
    { config: hooks },
    async (request, reply) => {
      const session = sessionOf(request);
      const { webhookKey } = request.params;
      const before = (await getWebhookConfigs(ctx, session.tenantId)).find(
        (c) => c.webhookKey === webhookKey,
      );
      await removeWebhookConfig(ctx, session.tenantId, webhookKey);
      await audit(ctx, session, "webhook.delete", `webhook:${webhookKey}`, { before });
      return seeOther(reply, "/console/settings/webhooks?done=webhook-deleted");
    },
  );

  scope.post<{ Params: { webhookKey: string } }>(
    "/settings/webhooks/:webhookKey/test",
    { config: hooks },
    async (request, reply) => {
      const session = sessionOf(request);
      const eventId = await sendTestEvent(ctx, session.tenantId, request.params.webhookKey);
      await audit(ctx, session, "webhook.test", `webhook:${request.params.webhookKey}`, {
        after: { eventId },
      });
      return seeOther(reply, "/console/settings/webhooks?done=test-sent");
    },
  );

  scope.post<{ Params: { deliveryId: string } }>(
    "/settings/webhooks/deliveries/:deliveryId/redeliver",
    { config: hooks },
    async (request, reply) => {
      const session = sessionOf(request);
      const { deliveryId } = request.params;
      const original = await getDelivery(ctx, deliveryId).catch((err: unknown) => {
        if (err instanceof AppError && err.status === 404) return undefined;
        throw err;
      });
      if (!original || original.tenantId !== session.tenantId)
        throw new AppError("not_found", "webhook delivery not found");
      const created = await redeliver(ctx, deliveryId);
      await audit(ctx, session, "webhook.redeliver", `delivery:${deliveryId}`, {
        before: { status: original.status },
        after: { deliveryId: created.deliveryId, webhookId: created.webhookId },
      });
      return seeOther(reply, "/console/settings/webhooks?done=redelivered");
    },
  );

  scope.get("/settings/providers", { config: hooks }, async (request, reply) => {
    const providers = await listProviders(ctx, sessionOf(request).tenantId);
    return sendPage(reply, <ProvidersView page={pageOf(request, reply)} providers={providers} />);
  });

  scope.get<Done>("/settings/users", { config: users }, async (request, reply) => {
    const list = await getUsers(ctx, sessionOf(request).tenantId);
    return sendPage(
      reply,
      <UsersView page={pageOf(request, reply)} users={list} notice={noticeOf(request.query.done)} />,
    );
  });

  scope.post("/settings/users", { config: users }, async (request, reply) => {
    const session = sessionOf(request);
    const form = formOf(request);
    const created = await createUser(
      ctx,
      session.tenantId,
      { email: form.text("email"), name: form.text("name"), role: form.text("role") },
      session.actor,
    );
    const list = await getUsers(ctx, session.tenantId);
    return sendPage(
      reply,
      <UsersView
        page={pageOf(request, reply)}
        users={list}
        created={{ name: created.name, setupUrl: created.setupUrl }}
      />,
      201,
    );
  });

  const notSelf = (userId: string, session: { userId: string }) => {
    if (userId === session.userId) {
      throw new AppError("conflict", "You cannot change or delete your own account; ask another admin.");
    }
  };

  scope.post<{ Params: { userId: string } }>(
    "/settings/users/:userId/role",
    { config: users },
    async (request, reply) => {
      const session = sessionOf(request);
      notSelf(request.params.userId, session);
      await changeRole(
        ctx,
        session.tenantId,
        request.params.userId,
        formOf(request).text("role"),
        session.actor,
      );
      return seeOther(reply, "/console/settings/users?done=role-changed");
    },
  );

  scope.post<{ Params: { userId: string } }>(
    "/settings/users/:userId/setup-link",
    { config: users },
    async (request, reply) => {
      const session = sessionOf(request);
      notSelf(request.params.userId, session);
      const renewed = await renewSetupLink(ctx, session.tenantId, request.params.userId, session.actor);
      const list = await getUsers(ctx, session.tenantId);
      return sendPage(
        reply,
        <UsersView
          page={pageOf(request, reply)}
          users={list}
          created={{ name: renewed.name, setupUrl: renewed.setupUrl }}
        />,
      );
    },
  );

  scope.post<{ Params: { userId: string } }>(
    "/settings/users/:userId/delete",
    { config: users },
    async (request, reply) => {
      const session = sessionOf(request);
      notSelf(request.params.userId, session);
      await getUser(ctx, session.tenantId, request.params.userId);
      await removeUser(ctx, session.tenantId, request.params.userId, session.actor);
      return seeOther(reply, "/console/settings/users?done=user-deleted");
    },
  );
}
