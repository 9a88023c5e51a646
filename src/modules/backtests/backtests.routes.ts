import { Type } from "typebox";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { errorResponse, named } from "../../platform/openapi.js";
import { routeGroup } from "../../platform/route-group.js";
import { CASE_TYPES } from "../case-model/index.js";
import {
  BACKTEST_LIMITS,
  cancelBacktest,
  getBacktest,
  getBacktestCases,
  getBacktests,
  startBacktest,
} from "./backtests.service.js";

const Timestamp = Type.String({ format: "date-time" });
const Count = Type.Integer({ minimum: 0 });

const Summary = Type.Object({
  decisions: Type.Record(Type.String(), Type.Record(Type.String(), Count), {
    description:
      "Cases by what the workflow decided (`approved`, `declined`, `in_review`, `failed`, or `none` for a case that never decided) and what the candidate decides (the same, or `needsInput`)",
  }),
  changed: Count,
  unchanged: Count,
  needsInput: Count,
  errors: Count,
  nodes: Type.Array(Type.Object({ nodeId: Type.String(), reached: Count, reachedBefore: Count })),
});

const Backtest = Type.Object({
  backtestId: Type.String({ format: "uuid" }),
  workflowId: Type.String(),
  version: Type.Integer(),
  from: Timestamp,
  to: Timestamp,
  caseType: Type.Union([Type.String(), Type.Null()]),
  sample: Type.Union([Type.Integer(), Type.Null()]),
  status: Type.Enum(["running", "completed", "cancelled", "failed"]),
  total: Count,
  done: Count,
  summary: Summary,
  error: Type.Union([Type.String(), Type.Null()]),
  createdAt: Timestamp,
  finishedAt: Type.Union([Timestamp, Type.Null()]),
});

const Path = Type.Array(Type.String());
const BacktestCase = Type.Object({
  caseId: Type.String({ format: "uuid" }),
  before: Type.Object({
    decision: Type.Union([Type.String(), Type.Null()]),
    path: Path,
    override: Type.Union([Type.String(), Type.Null()], {
      description: "An analyst's later decision, shown beside the workflow's (never taken as before)",
    }),
  }),
  after: Type.Object({
    decision: Type.Union([Type.String(), Type.Null()]),
    path: Path,
    error: Type.Optional(Type.String()),
    needsInput: Type.Optional(
      Type.String({ description: "The node that needs an input the case never had" }),
    ),
    current: Type.Optional(
      Type.Array(Type.String(), {
        description: "Inputs the case's record did not hold, read as they are now (`attributes`, `lists`)",
      }),
    ),
  }),
});
named({ Backtest, BacktestCase });

const TenantParams = Type.Object({ tenantId: Type.String() });
const BacktestParams = Type.Object({ tenantId: Type.String(), backtestId: Type.String() });

/** The operator API of backtests (contract section 8). */
export function backtestsRoutes(app: App, ctx: AppContext): void {
  const operator = routeGroup(app, ["operator: backtests"], { admin: true });

  operator.post(
    "/admin/tenants/:tenantId/backtests",
    {
      operationId: "startBacktest",
      summary: "Start a backtest: a workflow version over the workflow's past cases",
      description:
        "Replays the cases of the workflow (any version, dry runs left out) accepted in `[from, to)` on " +
        `the version, with the inputs each case had. The window is at most ${BACKTEST_LIMITS.windowDays} days; ` +
        `\`sample\` (at most ${BACKTEST_LIMITS.sample.toLocaleString("en")}) takes an even sample. ` +
        "Nothing is written to cases, events, webhooks or requests, and no vendor is called. 404 for an " +
        `unknown workflow or version; 409 \`backtest_limit_reached\` while ${BACKTEST_LIMITS.running} of the ` +
        "tenant's backtests run.",
      params: TenantParams,
      body: Type.Object(
        {
          workflowId: Type.String({ minLength: 1, maxLength: 200 }),
          version: Type.Integer({ minimum: 1 }),
          from: Timestamp,
          to: Timestamp,
          caseType: Type.Optional(Type.Enum([...CASE_TYPES])),
          sample: Type.Optional(Type.Integer({ minimum: 1, maximum: BACKTEST_LIMITS.sample })),
        },
        { additionalProperties: false },
      ),
      response: {
        202: Backtest,
        409: errorResponse(`${BACKTEST_LIMITS.running} of the tenant's backtests are running`),
      },
    },
    async (request, reply) => {
      const started = await startBacktest(ctx, request.params.tenantId, request.body);
      return reply.status(202).send(started);
    },
  );

  operator.get(
    "/admin/tenants/:tenantId/backtests",
    {
      operationId: "listBacktests",
      summary: "List the tenant's backtests, newest first",
      description: `The latest ${BACKTEST_LIMITS.listed}.`,
      params: TenantParams,
      response: { 200: Type.Object({ backtests: Type.Array(Backtest) }) },
    },
    async (request) => getBacktests(ctx, request.params.tenantId),
  );

  operator.get(
    "/admin/tenants/:tenantId/backtests/:backtestId",
    {
      operationId: "getBacktest",
      summary: "A backtest: its progress and its summary (the decision matrix)",
      description:
        "`summary.decisions[before][after]` counts the cases by the workflow's own decision and the " +
        "candidate's; `changed` and `unchanged` leave out the cases that need an input they never had.",
      params: BacktestParams,
      response: { 200: Backtest },
    },
    async (request) => getBacktest(ctx, request.params.tenantId, request.params.backtestId),
  );

  operator.get(
    "/admin/tenants/:tenantId/backtests/:backtestId/cases",
    {
      operationId: "listBacktestCases",
      summary: "A backtest's cases: before and after, in the order they were accepted",
      description:
        "`changed=true` keeps the cases whose decision changed; `nextCursor` is null on the last page.",
      params: BacktestParams,
      querystring: Type.Object(
        {
          changed: Type.Optional(Type.Boolean()),
          cursor: Type.Optional(Type.String({ maxLength: 20 })),
          limit: Type.Optional(
            Type.Integer({
              minimum: 1,
              maximum: BACKTEST_LIMITS.pageMax,
              default: BACKTEST_LIMITS.pageDefault,
            }),
          ),
        },
        { additionalProperties: false },
      ),
      response: {
        200: Type.Object({
          cases: Type.Array(BacktestCase),
          nextCursor: Type.Union([Type.String(), Type.Null()]),
        }),
      },
    },
    async (request) =>
      getBacktestCases(ctx, request.params.tenantId, request.params.backtestId, request.query),
  );

  operator.post(
    "/admin/tenants/:tenantId/backtests/:backtestId/cancel",
    {
      operationId: "cancelBacktest",
      summary: "Cancel a running backtest",
      description:
        "It stops before its next batch; the cases it replayed keep their results. 409 when it has completed or failed.",
      params: BacktestParams,
      response: { 200: Backtest, 409: errorResponse("The backtest has ended") },
    },
    async (request) => cancelBacktest(ctx, request.params.tenantId, request.params.backtestId),
  );
}
