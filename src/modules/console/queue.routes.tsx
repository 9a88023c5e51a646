import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { pageOf, sendPage, sessionOf } from "./console.plugin.js";
import { type QueueQuery, reviewQueue } from "./queue.service.js";
import { QueuePageView } from "./views/queue.js";

export function queueRoutes(scope: App, ctx: AppContext): void {
  scope.get<{ Querystring: QueueQuery }>(
    "/queue",
    { config: { console: { permission: "cases:read" } } },
    async (request, reply) => {
      const queue = await reviewQueue(ctx, sessionOf(request).tenantId, request.query);
      return sendPage(reply, <QueuePageView page={pageOf(request, reply)} queue={queue} />);
    },
  );
}
