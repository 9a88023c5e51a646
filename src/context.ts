import type { Config } from "./config.js";
import { caseSeamOf } from "./modules/cases/index.js";
import { consoleSeamOf } from "./modules/console/index.js";
import { featureModules } from "./modules/index.js";
import {
  listSourceOf,
  NodeTypes,
  setEvaluationBudget,
  setEvaluationNiceness,
} from "./modules/workflows/index.js";
import type { FeatureModule } from "./platform/app-types.js";
import { type BlobStore, createBlobStore } from "./platform/blobs/index.js";
import type { AppContext } from "./platform/context.js";
import type { Db } from "./platform/db/index.js";
import type { Logger } from "./platform/logger.js";
import { featureMigrationsDirs, MIGRATIONS_DIR, type Migration, readMigrations } from "./platform/migrate.js";

/** The node types of a list of features, in one catalogue. */
export function nodeTypesOf(features: readonly FeatureModule[]): NodeTypes {
  return new NodeTypes(features.flatMap((f) => f.nodeTypes ?? []));
}

/** The service's migrations: the platform's in `migrations/`, then each feature's `migrations/<name>/`. */
export function serviceMigrations(features: readonly FeatureModule[] = featureModules): Migration[] {
  return readMigrations([MIGRATIONS_DIR, ...featureMigrationsDirs(features.map((f) => f.name))]);
}

/**
 * A process's context: its configuration, database and logger, the configured blob store, and
 * what the features bring (their node types). Made once per process; tests pass extra features.
 */
export function createAppContext(
  parts: { config: Config; db: Db; log: Logger; blobs?: BlobStore },
  features: readonly FeatureModule[] = featureModules,
): AppContext {
  setEvaluationBudget(parts.config.evaluationBudget);
  setEvaluationNiceness(parts.config.evaluationNiceness);
  return {
    config: parts.config,
    db: parts.db,
    log: parts.log,
    blobs: parts.blobs ?? createBlobStore(parts.config),
    nodeTypes: nodeTypesOf(features),
    lists: listSourceOf(features),
    cases: caseSeamOf(features),
    console: consoleSeamOf(features),
  };
}
