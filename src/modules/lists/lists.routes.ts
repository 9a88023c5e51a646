import { Type } from "typebox";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { emptyResponse, errorResponse, named } from "../../platform/openapi.js";
import {
  changeListValues,
  getLists,
  getListValues,
  LIST_LIMITS,
  NORMALIZE_RULES,
  putList,
  removeList,
} from "./lists.service.js";

const TAGS = ["operator: lists"];
/** The actor of the operator API in the audit log. */
const OPERATOR = "operator";

/**
 * The body of a values call: 10,000 values of 256 characters, each up to 4 bytes in UTF-8 and
 * JSON-quoted, are about 10.3 MB, past the service's 1 MiB default.
 */
export const VALUES_BODY_LIMIT = 12 * 1024 * 1024;

const List = Type.Object({
  listId: Type.String(),
  description: Type.String(),
  normalize: Type.Enum(NORMALIZE_RULES, {
    description: "`none`, or the entity type whose rule normalises every value added and looked up",
  }),
  valueCount: Type.Integer(),
  createdAt: Type.String({ format: "date-time" }),
  updatedAt: Type.String({ format: "date-time" }),
});
named({ List });

const ListParams = Type.Object({ tenantId: Type.String(), listId: Type.String() });
const Values = Type.Array(Type.String({ minLength: 1, maxLength: LIST_LIMITS.valueLength }), {
  maxItems: LIST_LIMITS.valuesPerCall,
});

/** The body of a values call (the operator API's, and the console upload's). */
export const ValuesBody = Type.Object(
  { add: Type.Optional(Values), remove: Type.Optional(Values) },
  { additionalProperties: false },
);

/** The operator API of lists (contract section 7, "Lists"). */
export function listsRoutes(app: App, ctx: AppContext): void {
  app.put(
    "/admin/tenants/:tenantId/lists/:listId",
    {
      config: { admin: true },
      schema: {
        tags: TAGS,
        operationId: "putList",
        summary: "Create a list, or set its description or rule",
        description:
          "The list id matches `^[a-z][a-z0-9_]{0,63}$`. A new list is empty, with `normalize` `none` " +
          "unless given. The rule of a list that holds values cannot change (409 `conflict`).",
        params: ListParams,
        body: Type.Object(
          {
            description: Type.Optional(Type.String({ maxLength: LIST_LIMITS.descriptionLength })),
            normalize: Type.Optional(Type.String()),
          },
          { additionalProperties: false },
        ),
        response: { 200: List, 409: errorResponse("The list holds values and its rule would change") },
      },
    },
    async (request) => putList(ctx, request.params.tenantId, request.params.listId, request.body, OPERATOR),
  );

  app.get(
    "/admin/tenants/:tenantId/lists",
    {
      config: { admin: true },
      schema: {
        tags: TAGS,
        operationId: "listLists",
        summary: "List a tenant's lists, with their value counts",
        description: "By list id; `valueCount` is kept with each change of its values.",
        params: Type.Object({ tenantId: Type.String() }),
        response: { 200: Type.Object({ lists: Type.Array(List) }) },
      },
    },
    async (request) => getLists(ctx, request.params.tenantId),
  );

  app.post(
    "/admin/tenants/:tenantId/lists/:listId/values",
    {
      config: { admin: true },
      bodyLimit: VALUES_BODY_LIMIT,
      schema: {
        tags: TAGS,
        operationId: "changeListValues",
        summary: "Add and remove values of a list, in one transaction",
        description:
          `At most ${LIST_LIMITS.valuesPerCall} values in \`add\` and \`remove\` together (400 beyond), each of ` +
          `1 to ${LIST_LIMITS.valueLength} characters, normalised by the list's rule before anything ` +
          "is stored (a value empty once normalised, or in both `add` and `remove`, is 400). Values " +
          "already in the list are not added twice; values not in it are not removed. A change that " +
          `would leave more than ${LIST_LIMITS.valuesPerList} values is 409 \`list_full\`, and changes ` +
          "nothing. Cases whose steps start after the call returns see the change.",
        params: ListParams,
        body: ValuesBody,
        response: {
          200: Type.Object({ valueCount: Type.Integer() }),
          409: errorResponse(
            `The list would hold more than ${LIST_LIMITS.valuesPerList} values (\`list_full\`)`,
          ),
        },
      },
    },
    async (request) =>
      changeListValues(ctx, request.params.tenantId, request.params.listId, request.body, OPERATOR),
  );

  app.get(
    "/admin/tenants/:tenantId/lists/:listId/values",
    {
      config: { admin: true },
      schema: {
        tags: TAGS,
        operationId: "listListValues",
        summary: "Page through a list's values, in code point order",
        description:
          "`prefix` (normalised by the list's rule) keeps the values that start with it; " +
          "`nextCursor` is null on the last page.",
        params: ListParams,
        querystring: Type.Object(
          {
            prefix: Type.Optional(Type.String({ maxLength: LIST_LIMITS.valueLength })),
            cursor: Type.Optional(Type.String({ maxLength: 400 })),
            limit: Type.Optional(
              Type.Integer({ minimum: 1, maximum: LIST_LIMITS.pageMax, default: LIST_LIMITS.pageDefault }),
            ),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            values: Type.Array(Type.String()),
            nextCursor: Type.Union([Type.String(), Type.Null()]),
          }),
        },
      },
    },
    async (request) => getListValues(ctx, request.params.tenantId, request.params.listId, request.query),
  );

  app.delete(
    "/admin/tenants/:tenantId/lists/:listId",
    {
      config: { admin: true },
      schema: {
        tags: TAGS,
        operationId: "deleteList",
        summary: "Delete a list and its values",
        description:
          "Refused with 409 `list_in_use` while a published workflow version reads it; the error's " +
          "`details` name each such version.",
        params: ListParams,
        response: {
          204: emptyResponse("Deleted"),
          409: errorResponse("A published workflow version reads the list (`list_in_use`)"),
        },
      },
    },
    async (request, reply) => {
      await removeList(ctx, request.params.tenantId, request.params.listId, OPERATOR);
      return reply.status(204).send();
    },
  );
}
