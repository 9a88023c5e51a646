import { feature } from "../../platform/app-types.js";
import { aggregateNode } from "./aggregate.node.js";
import { entitiesCli } from "./entities.cli.js";
import { entitiesConsole } from "./entities.console.js";
import { entityWrites } from "./entities.repo.js";
import { entitiesRoutes } from "./entities.routes.js";
import { LinkStatistics } from "./link-statistics.js";

/** Entities: what the tenant knows across cases, resolved as each case is accepted (contract section 7). */
export const entitiesModule = feature("entities", {
  tables: ["entities", "case_entities"],
  onCaseAccepted: entityWrites,
  routes: entitiesRoutes,
  cli: entitiesCli,
  console: entitiesConsole,
  nodeTypes: [aggregateNode],
  background: (ctx) => [new LinkStatistics(ctx.db, ctx.log)],
});

export {
  /** The tenant's entity of a type and value, as the operator API finds it. */
  findEntities,
  /** A case's entities, each with the role its key had, for links from a case page. */
  getCaseEntities,
  /** One entity with the entities it shares cases with. */
  getEntity,
  /** An entity's cases, newest first. */
  getEntityCases,
  /** The other cases sharing a key with a case, newest first (up to 20), each with a key it shares. */
  getRelatedCases,
} from "./entities.service.js";
export {
  /** The types of entities: the customer, and every identifier type but the customer id's. */
  ENTITY_TYPES,
  /** The entity keys of a case's subject, normalised, each with its role. */
  entityKeysOf,
  /** A value as entities of its type store and match it. */
  normalizeValue,
  /** The ids of the entities a case's subject itself resolves to, its customer first. */
  subjectEntityIds,
} from "./keys.js";
