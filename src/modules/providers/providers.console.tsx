import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import { AppError } from "../../platform/errors.js";
import { getCase, requireWork } from "../cases/index.js";
import {
  type CaseView,
  type ConsoleSection,
  DataTable,
  formOf,
  Panel,
  pageOf,
  SettingsLayout,
  seeOther,
  sendCasePage,
  sendPage,
  sessionOf,
  Time,
  workerOf,
} from "../console/index.js";
import { can } from "../users/index.js";
import {
  getCaseActions,
  invokeDurableAction,
  invokePendingAction,
  type OfferedAction,
} from "./actions.service.js";
import { brokerOf } from "./brokers/index.js";
import { getRunResults } from "./case-results.service.js";
import { getProviderConfigs } from "./provider-configs.service.js";
import { ActionResult, ActionsPanel, hitForm, IdentityPanel, ScreeningPanel } from "./providers.views.js";
import { getCaseScreenings, reviewHit } from "./screening.service.js";

type CaseParams = { Params: { caseId: string } };

const review = { console: { permission: "cases:review" as const } };

const reviewer = (view: CaseView) =>
  Boolean(view.page.session && can(view.page.session.role, "cases:review"));

/** The posted parameters of an action: its schema's top-level strings and integers, when filled in. */
function paramsOf(form: ReturnType<typeof formOf>, action: OfferedAction): Record<string, unknown> {
  const properties = (action.paramsSchema.properties ?? {}) as Record<string, { type?: unknown }>;
  const params: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(properties)) {
    const value = form.text(`param.${name}`);
    if (value === "") continue;
    params[name] = schema.type === "integer" && /^-?\d{1,15}$/.test(value) ? Number(value) : value;
  }
  return params;
}

function providerRoutes(scope: App, ctx: AppContext): void {
  scope.post<CaseParams>("/cases/:caseId/screening", { config: review }, async (request, reply) => {
    const session = sessionOf(request);
    const { caseId } = request.params;
    const form = formOf(request);
    const input = {
      brokerId: form.text("brokerId"),
      hitId: form.text("hitId"),
      verdict: form.text("verdict"),
      reason: form.text("reason"),
    };
    const anchor = hitForm(input.brokerId, input.hitId);
    try {
      await reviewHit(ctx, { tenantId: session.tenantId, actor: session.actor }, caseId, input);
    } catch (error) {
      if (!(error instanceof AppError) || error.status !== 400) throw error;
      const fields = Object.fromEntries((error.details ?? []).map((d) => [d.path, d.message]));
      const problem = { form: anchor, message: error.message, fields, values: input };
      return sendCasePage(ctx, request, reply, caseId, { problem });
    }
    return seeOther(reply, `/console/cases/${caseId}?done=reviewed#${anchor}`);
  });

  // The answer is the case page with what the vendor gave: a new link or token is shown this once.
  scope.post<CaseParams>("/cases/:caseId/provider-actions", { config: review }, async (request, reply) => {
    const session = sessionOf(request);
    const { caseId } = request.params;
    const form = formOf(request);
    /** The case page with the action refused, saying why: 409. */
    const refuse = (message: string) =>
      sendCasePage(ctx, request, reply, caseId, {
        result: <ActionResult label="Provider action" outcome="failed" message={message} />,
        status: 409,
      });
    // The same rule as the case's other work: a dry run's case is not acted on, and an analyst
    // acts on their own cases and those nobody owns (an admin on any).
    if ((await getCase(ctx, session.tenantId, caseId)).dryRun) {
      return refuse("A dry run's case: no provider action is run on it.");
    }
    try {
      await requireWork(ctx, workerOf(session), caseId);
    } catch (error) {
      if (!(error instanceof AppError) || error.status !== 409) throw error;
      return refuse(error.message);
    }
    const { offered } = await getCaseActions(ctx, session.tenantId, caseId);
    const action = offered.find(
      (a) =>
        a.kind === form.text("kind") &&
        a.brokerId === form.text("brokerId") &&
        a.id === form.text("actionId") &&
        (a.kind === "durable" || a.handle === form.text("handle")),
    );
    if (!action) {
      return refuse(
        "This action is not offered on the case any more (the node it belonged to is no longer paused).",
      );
    }
    const caller = { tenantId: session.tenantId, actor: session.actor };
    const call = { actionId: action.id, params: paramsOf(form, action) };
    try {
      const { output } =
        action.kind === "pending"
          ? await invokePendingAction(ctx, caller, action.handle ?? "", call)
          : await invokeDurableAction(ctx, caller, caseId, action.brokerId, call);
      const kept = brokerOf(action.brokerId)?.durableActions.find((a) => a.id === action.id)?.keepsOutput;
      const result = <ActionResult label={action.label} outcome="ok" output={output} kept={kept === true} />;
      return sendCasePage(ctx, request, reply, caseId, { result });
    } catch (error) {
      if (!(error instanceof AppError) || (error.status >= 500 && error.status !== 502)) throw error;
      const result = <ActionResult label={action.label} outcome="failed" message={error.message} />;
      return sendCasePage(ctx, request, reply, caseId, { result, status: error.status });
    }
  });

  // Settings › Providers: the verification providers configured for the tenant (read only).
  scope.get(
    "/settings/providers",
    { config: { console: { permission: "webhooks:manage" } } },
    async (request, reply) => {
      const configs = await getProviderConfigs(ctx, sessionOf(request).tenantId);
      const page = pageOf(request, reply);
      return sendPage(
        reply,
        <SettingsLayout
          page={page}
          title="Providers"
          intro="Verification providers (identity verification, sanctions screening) your workflows call."
        >
          <Panel id="providers" title="Configured providers">
            <DataTable
              caption="Configured providers"
              rows={configs}
              empty="No provider is configured for your team. Ask your operator to configure one."
              columns={["Provider", "Base URL", "Configured"]}
              row={(p) => (
                <>
                  <td class="mono">{p.brokerId}</td>
                  <td class="mono small">{p.baseUrl}</td>
                  <td>
                    <Time iso={p.configuredAt} />
                  </td>
                </>
              )}
            />
          </Panel>
        </SettingsLayout>,
      );
    },
  );
}

/**
 * What the console shows of providers: a case's screening hits beside its subject with the
 * analysts' verdicts, its identity checks in words, the providers' actions as buttons, and
 * Settings › Providers.
 */
export const providersConsole: ConsoleSection = {
  links: [
    {
      href: "/console/settings/providers",
      title: "Providers",
      permission: "webhooks:manage",
      place: "settings",
    },
  ],
  routes: providerRoutes,
  caseNotices: { reviewed: "The verdict on the hit was recorded." },
  async caseMainPanels(ctx, tenantId, caseId, view) {
    const screenings = await getCaseScreenings(ctx, tenantId, caseId);
    if (!screenings) return null;
    return <ScreeningPanel screenings={screenings} view={view} caseId={caseId} canReview={reviewer(view)} />;
  },
  async casePanels(ctx, tenantId, caseId, view) {
    const [results, actions] = await Promise.all([
      getRunResults(ctx, tenantId, caseId),
      getCaseActions(ctx, tenantId, caseId),
    ]);
    const identity = results.length > 0 ? <IdentityPanel results={results} /> : null;
    const ran = actions.offered.length > 0 || actions.recent.length > 0;
    const buttons = ran ? (
      <ActionsPanel
        offered={actions.offered}
        recent={actions.recent}
        view={view}
        caseId={caseId}
        canAct={reviewer(view) && !view.dryRun && view.mayWork}
        refusal={
          view.dryRun
            ? "A dry run's case: no provider action is run on it."
            : reviewer(view) && !view.mayWork
              ? "Another analyst owns this case: only they, or an admin, act on it."
              : undefined
        }
      />
    ) : null;
    return identity || buttons ? (
      <>
        {identity}
        {buttons}
      </>
    ) : null;
  },
};
