import { Type } from "typebox";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { badRequest } from "../../platform/errors.js";
import { emptyResponse, errorResponse } from "../../platform/openapi.js";
import { routeGroup } from "../../platform/route-group.js";
import { partnerOf } from "../auth/index.js";
import { operatorBy } from "../users/index.js";
import {
  applyTag,
  getCaseTags,
  getTagOptions,
  removeTag,
  setTagOption,
  TAG_LIMITS,
  tagOptionAudit,
} from "./tags.service.js";

const Tag = Type.Object({
  tag: Type.String({ maxLength: TAG_LIMITS.length }),
  createdBy: Type.String({ description: "`apikey:<keyId>` when applied through the API" }),
  createdAt: Type.String({ format: "date-time" }),
});

const TagOption = Type.Object({
  tag: Type.String(),
  enabled: Type.Boolean(),
  createdAt: Type.String({ format: "date-time" }),
  updatedAt: Type.String({ format: "date-time" }),
});

const CaseParams = Type.Object({ caseId: Type.String() });

export function tagsRoutes(app: App, ctx: AppContext): void {
  const read = routeGroup(app, ["tags"], { scope: "tags:read" });
  const write = routeGroup(app, ["tags"], { scope: "tags:write" });
  const operator = routeGroup(app, ["operator: tags"], { admin: true });

  read.get(
    "/cases/:caseId/tags",
    {
      operationId: "listCaseTags",
      summary: "List a case's tags, oldest first",
      description: "Each tag with who applied it (`apikey:<keyId>` or `analyst:<userId>`) and when.",
      params: CaseParams,
      response: { 200: Type.Object({ tags: Type.Array(Tag) }) },
    },
    async (request) => ({ tags: await getCaseTags(ctx, partnerOf(request).tenantId, request.params.caseId) }),
  );

  write.post(
    "/cases/:caseId/tags",
    {
      operationId: "addCaseTag",
      summary: "Apply a tag from the tenant's vocabulary",
      description:
        "201 with the new tag; 200 with the original `createdBy` and `createdAt` when already applied. " +
        "A case carries at most 100 tags: one more is 409 `tag_limit_reached`.",
      params: CaseParams,
      body: Type.Object({ tag: Type.String({ minLength: 1, maxLength: TAG_LIMITS.length }) }),
      response: {
        200: Tag,
        201: Tag,
        409: errorResponse("The case carries 100 tags already (`tag_limit_reached`)"),
      },
    },
    async (request, reply) => {
      const key = partnerOf(request);
      const actor = { kind: "apikey", tenantId: key.tenantId, keyId: key.keyId } as const;
      const result = await applyTag(ctx, key.tenantId, actor, request.params.caseId, request.body.tag);
      return reply.status(result.created ? 201 : 200).send(result.tag);
    },
  );

  write.delete(
    "/cases/:caseId/tags",
    {
      operationId: "removeCaseTag",
      summary: "Remove a tag (idempotent)",
      description:
        "The tag is named by `?tag=`, or by a JSON body `{tag}`. 204 also when the case does not carry it.",
      params: CaseParams,
      querystring: Type.Object({ tag: Type.Optional(Type.String()) }),
      response: { 204: emptyResponse("Removed, or the case did not carry it") },
    },
    async (request, reply) => {
      const key = partnerOf(request);
      const body = request.body as { tag?: unknown } | undefined;
      const tag = request.query.tag ?? body?.tag;
      if (typeof tag !== "string") {
        throw badRequest("name the tag to remove with ?tag= or a JSON body {tag}", [
          { path: "tag", message: "is required" },
        ]);
      }
      await removeTag(ctx, key.tenantId, request.params.caseId, tag, {
        kind: "apikey",
        tenantId: key.tenantId,
        keyId: key.keyId,
      });
      return reply.status(204).send();
    },
  );

  operator.put(
    "/admin/tenants/:tenantId/tag-options/:tag",
    {
      operationId: "setTagOption",
      summary: "Add a tag option to a tenant's vocabulary, or enable or disable one",
      description: "Disabling an option stops new uses; tags already on cases stay.",
      params: Type.Object({ tenantId: Type.String(), tag: Type.String() }),
      body: Type.Object({ enabled: Type.Boolean() }, { additionalProperties: false }),
      response: { 200: TagOption },
    },
    async (request) => {
      const { tenantId, tag } = request.params;
      const audit = tagOptionAudit(operatorBy(tenantId), tag);
      return setTagOption(ctx, tenantId, tag, request.body.enabled, audit);
    },
  );

  operator.get(
    "/admin/tenants/:tenantId/tag-options",
    {
      operationId: "listTagOptions",
      summary: "List a tenant's tag vocabulary",
      description: "Every option, enabled or not, in the order they were added.",
      params: Type.Object({ tenantId: Type.String() }),
      response: { 200: Type.Object({ tagOptions: Type.Array(TagOption) }) },
    },
    async (request) => ({ tagOptions: await getTagOptions(ctx, request.params.tenantId) }),
  );
}
