import { batcherPer } from "../../platform/batcher.js";
import type { AppContext } from "../../platform/context.js";
import type { Executor } from "../../platform/db/index.js";
import { AppError, badRequest, type ErrorDetail, notFound } from "../../platform/errors.js";
import { ENTITY_TYPES, normalizeValue } from "../entities/index.js";
import { requireTenant } from "../tenants/index.js";
import { insertAudit } from "../users/index.js";
import { LIST_ID_PATTERN, type ListProbe, type ListSource, listsInUse } from "../workflows/index.js";
import {
  changeValues,
  containsValues,
  deleteList,
  existingListIds,
  findList,
  findLists,
  type ListRow,
  type NormalizedProbe,
  upsertList,
  valuesPage,
} from "./lists.repo.js";

/** The limits of lists (contract section 7, "Lists"). */
export const LIST_LIMITS = {
  /** Values a list holds at most: one more is 409 `list_full`. */
  valuesPerList: 1_000_000,
  /** Values added and removed by one call (one transaction) at most: more is 400. */
  valuesPerCall: 10_000,
  /** Characters of a value at most (after normalisation too): more is 400. */
  valueLength: 256,
  descriptionLength: 500,
  /** Values of one page of `GET …/values`: 100 unless asked, 1,000 at most. */
  pageDefault: 100,
  pageMax: 1000,
  /** Values of each kind an audit entry of a change shows (it counts them all). */
  auditSample: 10,
} as const;

/** How a list normalises values: `none` keeps them as given, an entity type applies its rule. */
export const NORMALIZE_RULES = ["none", ...ENTITY_TYPES] as const;
/** One of NORMALIZE_RULES. */
export type NormalizeRule = (typeof NORMALIZE_RULES)[number];

const LIST_ID = new RegExp(LIST_ID_PATTERN);

/** A list as the operator API shows it. */
export interface ListView {
  listId: string;
  description: string;
  normalize: NormalizeRule;
  valueCount: number;
  createdAt: string;
  updatedAt: string;
}

function viewOf(row: ListRow): ListView {
  return {
    listId: row.list_id,
    description: row.description,
    normalize: row.normalize as NormalizeRule,
    valueCount: row.value_count,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** A value as a list with this rule stores and matches it. */
export function normalizeFor(rule: string, value: string): string {
  return rule === "none" ? value : normalizeValue(rule, value);
}

async function requireList(ctx: AppContext, tenantId: string, listId: string): Promise<ListRow> {
  await requireTenant(ctx.db.root, tenantId);
  const row = LIST_ID.test(listId) ? await findList(ctx.db.root, tenantId, listId) : undefined;
  if (!row) throw notFound(`list ${listId}`);
  return row;
}

/** The tenant's lists, by id. */
export async function getLists(ctx: AppContext, tenantId: string): Promise<{ lists: ListView[] }> {
  await requireTenant(ctx.db.root, tenantId);
  return { lists: (await findLists(ctx.db.root, tenantId)).map(viewOf) };
}

/** One of the tenant's lists (404 when it has no such list). */
export async function getList(ctx: AppContext, tenantId: string, listId: string): Promise<ListView> {
  return viewOf(await requireList(ctx, tenantId, listId));
}

/**
 * Creates a list, or sets the description or the rule of the one the tenant has. A list holding
 * values keeps its rule (409): its values were normalised by it. `actor` is recorded in the audit
 * log (`operator`, or `analyst:<userId>` in the console).
 */
export async function putList(
  ctx: AppContext,
  tenantId: string,
  listId: string,
  body: { description?: string; normalize?: string },
  actor: string,
): Promise<ListView> {
  await requireTenant(ctx.db.root, tenantId);
  const problems: ErrorDetail[] = [];
  if (!LIST_ID.test(listId)) problems.push({ path: "listId", message: `must match ${LIST_ID_PATTERN}` });
  if (body.normalize !== undefined && !(NORMALIZE_RULES as readonly string[]).includes(body.normalize)) {
    problems.push({ path: "normalize", message: `must be one of ${NORMALIZE_RULES.join(", ")}` });
  }
  if (body.description !== undefined && body.description.length > LIST_LIMITS.descriptionLength) {
    problems.push({
      path: "description",
      message: `must be at most ${LIST_LIMITS.descriptionLength} characters`,
    });
  }
  if (problems.length > 0)
    throw badRequest(`invalid list: ${problems.map((p) => p.path).join(", ")}`, problems);
  return ctx.db.transaction(async (tx) => {
    const before = await findList(tx, tenantId, listId);
    if (
      before &&
      body.normalize !== undefined &&
      body.normalize !== before.normalize &&
      before.value_count > 0
    ) {
      throw new AppError(
        "conflict",
        `list ${listId} holds ${before.value_count} values normalised as ${before.normalize}; remove them before changing its rule`,
      );
    }
    const row = await upsertList(tx, tenantId, listId, body);
    const view = viewOf(row);
    await insertAudit(tx, { tenantId, actor }, before ? "list.set" : "list.create", `list:${listId}`, {
      ...(before ? { before: described(before) } : {}),
      after: described(row),
    });
    return view;
  });
}

const described = (row: ListRow) => ({ description: row.description, normalize: row.normalize });

/** The values of a change, normalised by the list's rule; every problem of them, by path. */
function normalizedValues(rule: string, values: readonly string[], path: string, problems: ErrorDetail[]) {
  const out = new Set<string>();
  values.forEach((raw, i) => {
    const value = normalizeFor(rule, raw);
    if (value === "") problems.push({ path: `${path}[${i}]`, message: "is empty once normalised" });
    else if ([...value].length > LIST_LIMITS.valueLength) {
      problems.push({
        path: `${path}[${i}]`,
        message: `is longer than ${LIST_LIMITS.valueLength} characters`,
      });
    } else out.add(value);
  });
  return out;
}

/**
 * Adds and removes values of a list, normalised by its rule, in one transaction (at most 10,000
 * values a call). A value already in the list is not added twice, one not in it is not removed.
 * The list's count after the change; 409 `list_full` past 1,000,000 values, nothing changed.
 */
export async function changeListValues(
  ctx: AppContext,
  tenantId: string,
  listId: string,
  body: { add?: readonly string[]; remove?: readonly string[] },
  actor: string,
): Promise<{ valueCount: number }> {
  const list = await requireList(ctx, tenantId, listId);
  const addRaw = body.add ?? [];
  const removeRaw = body.remove ?? [];
  if (addRaw.length + removeRaw.length > LIST_LIMITS.valuesPerCall) {
    throw badRequest(
      `a call adds and removes at most ${LIST_LIMITS.valuesPerCall} values; this one has ${addRaw.length + removeRaw.length}`,
      [{ path: "", message: `holds more than ${LIST_LIMITS.valuesPerCall} values in add and remove` }],
    );
  }
  const problems: ErrorDetail[] = [];
  const add = normalizedValues(list.normalize, addRaw, "add", problems);
  const remove = normalizedValues(list.normalize, removeRaw, "remove", problems);
  removeRaw.forEach((raw, i) => {
    if (add.has(normalizeFor(list.normalize, raw))) {
      problems.push({ path: `remove[${i}]`, message: "is also added by this call" });
    }
  });
  if (problems.length > 0) {
    throw badRequest(`invalid values: ${problems.map((p) => `${p.path} ${p.message}`).join("; ")}`, problems);
  }
  return ctx.db.transaction(async (tx) => {
    const changed = await changeValues(tx, list.list_key, [...add], [...remove]);
    if (changed.valueCount > LIST_LIMITS.valuesPerList) {
      throw new AppError(
        "list_full",
        `list ${listId} would hold ${changed.valueCount} values, more than ${LIST_LIMITS.valuesPerList}; nothing was changed`,
      );
    }
    await insertAudit(tx, { tenantId, actor }, "list.values", `list:${listId}`, {
      after: {
        added: changed.added,
        removed: changed.removed,
        valueCount: changed.valueCount,
        ...(add.size > 0 ? { add: [...add].slice(0, LIST_LIMITS.auditSample) } : {}),
        ...(remove.size > 0 ? { remove: [...remove].slice(0, LIST_LIMITS.auditSample) } : {}),
      },
    });
    return { valueCount: changed.valueCount };
  });
}

/** The smallest string after every string that starts with `prefix`, in code point order. */
function pastPrefix(prefix: string): string | undefined {
  const points = [...prefix];
  while (points.length > 0) {
    const last = (points.pop() as string).codePointAt(0) as number;
    let next = last + 1;
    if (next === 0xd800) next = 0xe000;
    if (next <= 0x10ffff) return points.join("") + String.fromCodePoint(next);
  }
  return undefined;
}

const encodeCursor = (value: string) => Buffer.from(value, "utf8").toString("base64url");

function decodeCursor(cursor: string): string {
  const value = /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, "base64url").toString("utf8") : "";
  if (
    value === "" ||
    value.includes("\u0000") ||
    value.includes("\ufffd") ||
    encodeCursor(value) !== cursor
  ) {
    throw badRequest("cursor is not one this API returned", [{ path: "cursor", message: "is not valid" }]);
  }
  return value;
}

/**
 * A page of a list's values in code point order, those starting with `prefix` (normalised by the
 * list's rule) when given; `nextCursor` continues after the page's last value.
 */
export async function getListValues(
  ctx: AppContext,
  tenantId: string,
  listId: string,
  query: { prefix?: string; cursor?: string; limit?: number },
): Promise<{ values: string[]; nextCursor: string | null }> {
  const list = await requireList(ctx, tenantId, listId);
  const limit = Math.min(query.limit ?? LIST_LIMITS.pageDefault, LIST_LIMITS.pageMax);
  const prefix = query.prefix ? normalizeFor(list.normalize, query.prefix) : "";
  const after = query.cursor ? decodeCursor(query.cursor) : undefined;
  const to = prefix === "" ? undefined : pastPrefix(prefix);
  const page = await valuesPage(ctx.db.root, list.list_key, {
    ...(prefix === "" ? {} : { from: prefix }),
    ...(to === undefined ? {} : { to }),
    ...(after === undefined ? {} : { after }),
    limit: limit + 1,
  });
  const values = page.slice(0, limit);
  const last = values.at(-1);
  return { values, nextCursor: page.length > limit && last !== undefined ? encodeCursor(last) : null };
}

/** Deletes a list and its values; 409 `list_in_use` while a published version reads it. */
export async function removeList(
  ctx: AppContext,
  tenantId: string,
  listId: string,
  actor: string,
): Promise<void> {
  await requireList(ctx, tenantId, listId);
  const readers = (await listsInUse(ctx, tenantId)).get(listId);
  if (readers && readers.length > 0) {
    throw new AppError(
      "list_in_use",
      `list ${listId} is read by published workflow versions (any of which may be made current again): ${readers.join(", ")}`,
      { details: readers.map((v) => ({ path: "", message: `read by ${v}` })) },
    );
  }
  await ctx.db.transaction(async (tx) => {
    const row = await deleteList(tx, tenantId, listId);
    if (!row) throw notFound(`list ${listId}`);
    await insertAudit(tx, { tenantId, actor }, "list.delete", `list:${listId}`, {
      before: { ...described(row), valueCount: row.value_count },
    });
  });
}

/** Each rule's form of the probe's value, rules giving the same value sharing one entry. */
function variantsOf(value: string): NormalizedProbe["variants"] {
  const byValue = new Map<string, string[]>();
  for (const rule of NORMALIZE_RULES) {
    const v = normalizeFor(rule, value);
    byValue.set(v, [...(byValue.get(v) ?? []), rule]);
  }
  return [...byValue].map(([v, rules]) => ({ value: v, rules }));
}

/**
 * The lookups asked of one executor at once, one statement for all: the cases of a starter batch
 * run side by side in one transaction, and each asks for its own probes (decision 0021).
 */
const lookupsOf = batcherPer(
  async (db: Executor, asks: Array<{ tenantId: string; probes: readonly ListProbe[] }>) => {
    const probes = asks.flatMap(({ tenantId, probes }) =>
      probes.map((p) => ({ tenantId, list: p.list, variants: variantsOf(p.value) })),
    );
    const answers = await containsValues(db, probes);
    let at = 0;
    return asks.map(({ probes }) => {
      at += probes.length;
      return answers.slice(at - probes.length, at);
    });
  },
  { maxBatch: 256, lanes: 1 },
);

/**
 * Where `inList` is answered (the workflows seam): all probes of a round in one statement, in the
 * caller's transaction, together with those other evaluations ask of it meanwhile. The list's
 * rule is read with its row, so no rule is cached anywhere.
 */
export const listSource: ListSource = {
  contains(db: Executor, tenantId: string, probes: readonly ListProbe[]) {
    if (probes.length === 0) return Promise.resolve([]);
    return lookupsOf(db).add({ tenantId, probes });
  },
  async unknown(db: Executor, tenantId: string, listIds: readonly string[]) {
    const known = await existingListIds(db, tenantId, listIds);
    return listIds.filter((id) => !known.has(id));
  },
};
