import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import {
  type ConsoleSection,
  DataTable,
  Layout,
  Panel,
  pageOf,
  sendPage,
  sessionOf,
  Time,
} from "../console/index.js";
import { casesWithIdentifier } from "./entities.repo.js";
import { getCaseEntities, getEntity, getEntityCases, getRelatedCases } from "./entities.service.js";

type Entity = Awaited<ReturnType<typeof getEntity>>;
type Cases = Awaited<ReturnType<typeof getEntityCases>>["cases"];

/** An entity's page: what it is, when it was seen, its newest cases and the entities it shares cases with. */
function EntityPage({
  page,
  entity,
  cases,
}: {
  page: ReturnType<typeof pageOf>;
  entity: Entity;
  cases: Cases;
}) {
  const title = `${entity.type} ${entity.value}`;
  return (
    <Layout page={page} title={title}>
      <div class="page-head">
        <div>
          <p class="small">
            <a href="/console/queue">Review queue</a> › Entity
          </p>
          <h1>
            <span class="muted">{entity.type}</span> <span class="mono">{entity.value}</span>
          </h1>
          <p>
            {entity.caseCount} {entity.caseCount === 1 ? "case" : "cases"} · first seen{" "}
            <Time iso={entity.firstSeenAt} /> · last seen <Time iso={entity.lastSeenAt} />
          </p>
        </div>
      </div>
      <div class="grid grid-case">
        <div>
          <Panel title="Cases, newest first" id="entity-cases">
            <DataTable
              caption="The entity's cases, newest first"
              rows={cases}
              empty="No case carries it."
              columns={["Case", "Status", "Type", { head: "Created", narrow: true }]}
              row={(c) => (
                <>
                  <td>
                    <a class="case-link" href={`/console/cases/${c.caseId}`}>
                      {c.displayName ?? `Case ${c.caseId.slice(0, 8)}`}
                    </a>
                  </td>
                  <td>{c.status}</td>
                  <td>{c.type}</td>
                  <td class="hide-narrow">
                    <Time iso={c.createdAt} />
                  </td>
                </>
              )}
            />
          </Panel>
        </div>
        <div>
          <Panel title="Shares cases with" id="linked">
            <DataTable
              caption="Entities that share a case with it, most shared first"
              rows={entity.linked}
              empty="No other entity shares a case with it."
              columns={["Entity", { head: "Shared cases", num: true }]}
              row={(l) => (
                <>
                  <td>
                    <span class="muted">{l.type}</span>{" "}
                    <a class="mono" href={`/console/entities/${l.entityId}`}>
                      {l.value}
                    </a>
                  </td>
                  <td class="num">{l.sharedCases}</td>
                </>
              )}
            />
          </Panel>
        </div>
      </div>
    </Layout>
  );
}

function entityRoutes(scope: App, ctx: AppContext): void {
  scope.get<{ Params: { entityId: string } }>(
    "/entities/:entityId",
    { config: { console: { permission: "cases:read" } } },
    async (request, reply) => {
      const { tenantId } = sessionOf(request);
      const [entity, cases] = await Promise.all([
        getEntity(ctx, tenantId, request.params.entityId),
        getEntityCases(ctx, tenantId, request.params.entityId, { limit: 50 }),
      ]);
      return sendPage(
        reply,
        <EntityPage page={pageOf(request, reply)} entity={entity} cases={cases.cases} />,
      );
    },
  );
}

/** A case page's entities (each a link to its page) and the other cases sharing a key with it. */
async function casePanels(ctx: AppContext, tenantId: string, caseId: string) {
  const [entities, related] = await Promise.all([
    getCaseEntities(ctx, tenantId, caseId),
    getRelatedCases(ctx, tenantId, caseId),
  ]);
  return (
    <>
      <Panel title="Entities" id="entities">
        {entities.length === 0 ? (
          <p class="muted">No identifier of this case is linked (a dry run is never linked).</p>
        ) : (
          <ul>
            {entities.map((e) => (
              <li>
                <span class="muted">{e.type}</span>{" "}
                <a class="mono" href={`/console/entities/${e.entityId}`}>
                  {e.value}
                </a>
                {e.role === "subject" ? null : <span class="small muted"> ({e.role})</span>}
              </li>
            ))}
          </ul>
        )}
      </Panel>
      <Panel title="Related cases" id="related">
        {related.length === 0 ? (
          <p class="muted">No other case shares an identifier with this one.</p>
        ) : (
          <ul>
            {related.map((c) => (
              <li>
                <a href={`/console/cases/${c.caseId}`}>{c.displayName ?? `Case ${c.caseId.slice(0, 8)}`}</a>{" "}
                <span class="small muted">
                  {c.status} · shares {c.shares.type} <span class="mono">{c.shares.value}</span> ·{" "}
                  <Time iso={c.createdAt} />
                </span>
              </li>
            ))}
          </ul>
        )}
      </Panel>
    </>
  );
}

/**
 * The entity pages of the console, what a case page shows of its entities and related cases, and
 * the cases the "All cases" search finds by any identifier.
 */
export const entitiesConsole: ConsoleSection = {
  routes: entityRoutes,
  casePanels,
  searchCases: (ctx, tenantId, text) => casesWithIdentifier(ctx.db.root, tenantId, text),
};
