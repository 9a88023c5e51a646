import { Batcher } from "../../platform/batcher.js";
import type { AppContext } from "../../platform/context.js";
import type { Executor } from "../../platform/db/index.js";
import { AppError, notFound } from "../../platform/errors.js";
import { oncePer } from "../../platform/once-per.js";
import { requireTenant } from "../tenants/index.js";
import { insertAudit } from "../users/index.js";
import { checkDefinitionLimits } from "./definition-limits.js";
import type { NodeTypes } from "./node-type.js";
import { type CompiledWorkflow, compileWorkflow, type VersionKey } from "./workflow.compiler.js";
import { PATTERN_MESSAGES, WORKFLOW_ID_PATTERN } from "./workflow.schema.js";
import type { WorkflowDefinition } from "./workflow.types.js";
import { listReferencesOf, validateDefinition } from "./workflow.validator.js";
import {
  findSubmissionTargets,
  findVersion,
  insertVersion,
  listVersions,
  listWorkflows,
  markPublished,
  type SubmissionTargetKey,
  setCurrentVersion,
  takeNextVersion,
} from "./workflows.repo.js";

const WORKFLOW_ID = new RegExp(WORKFLOW_ID_PATTERN);

/** The largest version number PostgreSQL's integer holds. */
const MAX_VERSION = 2_147_483_647;

export interface CreatedVersionView {
  workflowId: string;
  version: number;
  createdAt: string;
}

export interface PublishedVersionView {
  workflowId: string;
  version: number;
  publishedAt: string;
  current: true;
}

export interface WorkflowView {
  workflowId: string;
  currentVersion: number | null;
  versions: Array<{ version: number; createdAt: string; publishedAt: string | null }>;
}

export interface VersionView {
  workflowId: string;
  version: number;
  createdAt: string;
  publishedAt: string | null;
  current: boolean;
  definition: Record<string, unknown>;
}

/**
 * Creates the next version of a workflow (the workflow itself on its first version) from a
 * definition checked in full first: a refused definition never takes a number. In the tenant's
 * audit log as the operator's (the operator API is its only door).
 */
export async function createVersion(
  ctx: AppContext,
  tenantId: string,
  workflowId: string,
  definition: unknown,
): Promise<CreatedVersionView> {
  await requireTenant(ctx.db.root, tenantId);
  if (!WORKFLOW_ID.test(workflowId))
    throw refused("workflowId", PATTERN_MESSAGES[WORKFLOW_ID_PATTERN] as string);
  const limits = checkDefinitionLimits(definition);
  const problems = limits.length > 0 ? limits : validateDefinition(ctx.nodeTypes, definition);
  if (problems.length > 0) {
    const first = problems[0] as { path: string; message: string };
    const count = problems.length === 1 ? "a problem" : `${problems.length} problems`;
    throw new AppError(
      "invalid_request",
      `the workflow definition has ${count}; the first: ${first.path} ${first.message}`,
      { details: problems },
    );
  }
  await checkListsExist(ctx, tenantId, definition);
  return ctx.db.transaction(async (tx) => {
    const version = await takeNextVersion(tx, tenantId, workflowId);
    const row = await insertVersion(tx, tenantId, workflowId, version, definition);
    await insertAudit(tx, { tenantId, actor: "operator" }, "workflow.version", `workflow:${workflowId}`, {
      after: { version },
    });
    return { workflowId, version, createdAt: row.created_at.toISOString() };
  });
}

/** A definition reading a list the tenant does not have is refused (400 naming each such list). */
async function checkListsExist(ctx: AppContext, tenantId: string, definition: unknown): Promise<void> {
  const refs = listReferencesOf(ctx.nodeTypes, definition);
  if (refs.length === 0) return;
  const named = [...new Set(refs.map((r) => r.list))];
  const unknown = new Set(ctx.lists ? await ctx.lists.unknown(ctx.db.root, tenantId, named) : named);
  const details = refs
    .filter((r) => unknown.has(r.list))
    .map((r) => ({ path: r.path, message: `reads the list "${r.list}", which this tenant does not have` }));
  if (details.length === 0) return;
  throw new AppError(
    "invalid_request",
    `the workflow definition reads ${unknown.size === 1 ? "a list" : "lists"} this tenant does not have: ${[...unknown].join(", ")}`,
    { details },
  );
}

/**
 * The lists the tenant's published versions read with `inList`, each with the versions that read
 * it (`<workflowId> v<version>`): a list in use cannot be deleted.
 */
export async function listsInUse(ctx: AppContext, tenantId: string): Promise<Map<string, string[]>> {
  const versions = (await listVersions(ctx.db.root, tenantId)).filter((v) => v.published_at !== null);
  const used = new Map<string, string[]>();
  for (const v of versions) {
    const wf = await getCompiledWorkflow(ctx.nodeTypes, ctx.db.root, tenantId, v.workflow_id, v.version);
    for (const list of wf?.lists ?? []) {
      used.set(list, [...(used.get(list) ?? []), `${v.workflow_id} v${v.version}`]);
    }
  }
  return used;
}

/**
 * Publishes a version and makes it current; publishing an older version again rolls back to it.
 * In the tenant's audit log with its actor (`operator` for the operator API).
 */
export async function publishVersion(
  ctx: AppContext,
  tenantId: string,
  workflowId: string,
  version: number,
  actor = "operator",
): Promise<PublishedVersionView> {
  const wf = await requireVersion(ctx, tenantId, workflowId, version);
  await checkTenantRequirements(ctx.db.root, tenantId, wf);
  // A list read by the version may have been deleted since the version was created.
  await checkListsExist(ctx, tenantId, wf.definition);
  return ctx.db.transaction(async (tx) => {
    const publishedAt = await markPublished(tx, tenantId, workflowId, version);
    if (!publishedAt) throw notFound(`version ${version} of workflow ${workflowId}`);
    await setCurrentVersion(tx, tenantId, workflowId, version);
    await insertAudit(tx, { tenantId, actor }, "workflow.publish", `workflow:${workflowId}`, {
      after: { version },
    });
    return { workflowId, version, publishedAt: publishedAt.toISOString(), current: true };
  });
}

export async function getWorkflows(ctx: AppContext, tenantId: string): Promise<WorkflowView[]> {
  await requireTenant(ctx.db.root, tenantId);
  const [workflows, versions] = await Promise.all([
    listWorkflows(ctx.db.root, tenantId),
    listVersions(ctx.db.root, tenantId),
  ]);
  const views = new Map<string, WorkflowView>(
    workflows.map((w) => [
      w.workflow_id,
      { workflowId: w.workflow_id, currentVersion: w.current_version, versions: [] },
    ]),
  );
  for (const v of versions) {
    views.get(v.workflow_id)?.versions.push({
      version: v.version,
      createdAt: v.created_at.toISOString(),
      publishedAt: v.published_at?.toISOString() ?? null,
    });
  }
  return [...views.values()];
}

export async function getVersion(
  ctx: AppContext,
  tenantId: string,
  workflowId: string,
  version: number,
): Promise<VersionView> {
  await requireTenant(ctx.db.root, tenantId);
  const row = await findVersion(ctx.db.root, tenantId, workflowId, version);
  if (!row) throw notFound(`version ${version} of workflow ${workflowId}`);
  return {
    workflowId: row.workflow_id,
    version: row.version,
    createdAt: row.created_at.toISOString(),
    publishedAt: row.published_at?.toISOString() ?? null,
    current: row.current,
    definition: row.definition as Record<string, unknown>,
  };
}

// ---------------------------------------------------------------------------------------------
// For the engine: compiled versions, cached per process. A version never changes once created
// (the database refuses it), so a cached compilation is never stale, on any process.

const CACHE_CAPACITY = 1000;
/** One cache per catalogue of node types: what a version compiles to depends on them. */
function cacheOf(types: NodeTypes): Map<string, CompiledWorkflow> {
  return types.derived("compiledVersions", () => new Map<string, CompiledWorkflow>());
}

function cacheKey(k: VersionKey): string {
  return `${k.tenantId}\u0000${k.workflowId}\u0000${k.version}`;
}

function cached(types: NodeTypes, key: VersionKey): CompiledWorkflow | undefined {
  const cache = cacheOf(types);
  const id = cacheKey(key);
  const hit = cache.get(id);
  if (hit) {
    // Least recently used goes first: a hit moves to the back.
    cache.delete(id);
    cache.set(id, hit);
  }
  return hit;
}

function remember(types: NodeTypes, compiled: CompiledWorkflow): CompiledWorkflow {
  const cache = cacheOf(types);
  cache.set(cacheKey(compiled), compiled);
  while (cache.size > CACHE_CAPACITY) cache.delete(cache.keys().next().value as string);
  return compiled;
}

function isVersionNumber(version: number): boolean {
  return Number.isInteger(version) && version >= 1 && version <= MAX_VERSION;
}

/** Any existing version, published or not (dry runs, running cases); undefined when there is none. */
export async function getCompiledWorkflow(
  types: NodeTypes,
  db: Executor,
  tenantId: string,
  workflowId: string,
  version: number,
): Promise<CompiledWorkflow | undefined> {
  const key = { tenantId, workflowId, version };
  const hit = cached(types, key);
  if (hit) return hit;
  if (!isVersionNumber(version)) return undefined;
  const row = await findVersion(db, tenantId, workflowId, version);
  if (!row) return undefined;
  // Another caller may have compiled it while this one read.
  return (
    cached(types, key) ?? remember(types, compileWorkflow(types, key, row.definition as WorkflowDefinition))
  );
}

/** A version of the tenant's workflow, compiled: 404 for an unknown tenant, workflow or version. */
export async function requireVersion(
  ctx: AppContext,
  tenantId: string,
  workflowId: string,
  version: number,
): Promise<CompiledWorkflow> {
  await requireTenant(ctx.db.root, tenantId);
  const wf = await getCompiledWorkflow(ctx.nodeTypes, ctx.db.root, tenantId, workflowId, version);
  if (!wf) throw notFound(`version ${version} of workflow ${workflowId}`);
  return wf;
}

/**
 * What a version needs of its tenant before it runs (node types' `checkTenant`, such as a
 * provider node's broker being configured): a 400 naming each node that cannot run.
 */
export async function checkTenantRequirements(
  db: Executor,
  tenantId: string,
  wf: CompiledWorkflow,
): Promise<void> {
  const details: Array<{ path: string; message: string }> = [];
  const ids = [...wf.nodes.keys()];
  for (const node of wf.nodes.values()) {
    const problem = await wf.nodeTypes.of(node.type)?.checkTenant?.(node, { db, tenantId });
    if (problem) details.push({ path: `nodes[${ids.indexOf(node.id)}]`, message: problem });
  }
  if (details.length > 0) {
    throw new AppError(
      "invalid_request",
      `version ${wf.version} of workflow ${wf.workflowId} cannot run for this tenant: ${details.map((d) => d.message).join("; ")}`,
      { details },
    );
  }
}

function refused(path: string, message: string): AppError {
  return new AppError("invalid_request", `${path} ${message}`, { details: [{ path, message }] });
}

/** The lookups of concurrent submissions share one statement (see Batcher); nothing is cached. */
const submissionTargets = oncePer((db: Executor) => {
  const find = (keys: SubmissionTargetKey[]) => findSubmissionTargets(db, keys);
  return new Batcher(find, { maxBatch: 128, lanes: 1 });
});

/**
 * The version a new case runs on (`POST /cases`): the pinned version if it is published, else
 * the current one. An unknown workflow, one with nothing published, or an unknown or
 * unpublished pinned version is a 400 naming the field.
 */
export async function resolveSubmissionWorkflow(
  types: NodeTypes,
  db: Executor,
  tenantId: string,
  workflowId: string,
  version: number | undefined,
): Promise<CompiledWorkflow> {
  return (await resolveSubmissionTarget(types, db, { tenantId, workflowId, version }, true)).wf;
}

/**
 * Versions this process has seen published, pinned or current, by tenant and workflow (decision
 * 0028). A published version stays published, so a pinned one needs no second look; a current
 * one may be replaced by a publish in any process, so a case on it is inserted only while it is
 * still current (`confirmCurrent`), and a submission that finds it replaced looks again.
 */
const seenVersions = new WeakMap<Executor, { current: Map<string, number>; published: Set<string> }>();
/** Entries kept per database before the memory starts again empty. */
const SEEN_LIMIT = 10_000;

function seen(db: Executor) {
  let entry = seenVersions.get(db);
  if (!entry || entry.current.size + entry.published.size > SEEN_LIMIT) {
    entry = { current: new Map(), published: new Set() };
    seenVersions.set(db, entry);
  }
  return entry;
}

/**
 * The version a new case runs on, as `resolveSubmissionWorkflow` finds it, from what this
 * process has seen where it can (`fresh` reads the database in any case). `confirmCurrent`: the
 * version was taken as the workflow's current one without reading it now, and the case's insert
 * must confirm it still is.
 */
export async function resolveSubmissionTarget(
  types: NodeTypes,
  db: Executor,
  submission: SubmissionTargetKey,
  fresh: boolean,
): Promise<{ wf: CompiledWorkflow; confirmCurrent: boolean }> {
  const { tenantId, workflowId, version } = submission;
  const memory = seen(db);
  const name = `${tenantId}\u0000${workflowId}`;
  if (!fresh) {
    const known = version === undefined ? memory.current.get(name) : version;
    if (known !== undefined && (version === undefined || memory.published.has(`${name}\u0000${version}`))) {
      const wf = await getCompiledWorkflow(types, db, tenantId, workflowId, known);
      if (wf) return { wf, confirmCurrent: version === undefined };
    }
  }
  const wf = await lookUpSubmissionWorkflow(types, db, submission);
  if (version === undefined) memory.current.set(name, wf.version);
  memory.published.add(`${name}\u0000${wf.version}`);
  return { wf, confirmCurrent: false };
}

async function lookUpSubmissionWorkflow(
  types: NodeTypes,
  db: Executor,
  submission: SubmissionTargetKey,
): Promise<CompiledWorkflow> {
  const { tenantId, workflowId, version } = submission;
  if (version !== undefined && !isVersionNumber(version)) {
    throw refused("workflowVersion", `${version} is not a version of workflow ${workflowId}`);
  }
  const target = await submissionTargets(db).add(submission);
  if (!target) throw refused("workflowId", `"${workflowId}" is not a workflow of this tenant`);
  if (version === undefined && target.currentVersion === null) {
    throw refused("workflowId", `"${workflowId}" has no published version yet`);
  }
  if (!target.exists || target.version === null) {
    throw refused("workflowVersion", `${version} is not a version of workflow ${workflowId}`);
  }
  if (!target.published) {
    throw refused("workflowVersion", `version ${version} of workflow ${workflowId} is not published`);
  }
  const compiled = await getCompiledWorkflow(types, db, tenantId, workflowId, target.version);
  if (!compiled) throw new AppError("internal", `version ${target.version} of ${workflowId} vanished`);
  return compiled;
}
