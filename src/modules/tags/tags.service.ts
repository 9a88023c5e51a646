import type { Actor, AppContext } from "../../platform/context.js";
import { actorLabel } from "../../platform/context.js";
import type { InSameTransaction } from "../../platform/db/index.js";
import { AppError, badRequest, notFound } from "../../platform/errors.js";
import { caseExists, lockCase } from "../cases/index.js";
import { requireTenant } from "../tenants/index.js";
import { type AuditBy, audited, insertAudit } from "../users/index.js";
import {
  type CaseTagRow,
  deleteCaseTag,
  findCaseTag,
  insertCaseTagIfAllowed,
  isTagOptionEnabled,
  listCaseTags,
  listTagOptions,
  type TagOptionRow,
  upsertTagOption,
} from "./tags.repo.js";

/** The limits of tags (contract section 2, "Tags"): characters of a tag, tags a case carries. */
export const TAG_LIMITS = { length: 64, perCase: 100 } as const;

export interface TagView {
  tag: string;
  createdBy: string;
  createdAt: string;
}

export interface TagOptionView {
  tag: string;
  enabled: boolean;
  createdAt: string;
  updatedAt: string;
}

export function toTagView(row: CaseTagRow): TagView {
  return { tag: row.tag, createdBy: row.created_by, createdAt: row.created_at.toISOString() };
}

function toOptionView(row: TagOptionRow): TagOptionView {
  return {
    tag: row.tag,
    enabled: row.enabled,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** A tag is 1 to 64 characters with no surrounding whitespace or control characters. */
export function checkTag(tag: string, path: string): void {
  let problem: string | undefined;
  const length = [...tag].length;
  if (length === 0) problem = "must not be empty";
  else if (length > TAG_LIMITS.length) problem = `must be at most ${TAG_LIMITS.length} characters`;
  else if (tag.trim() !== tag) problem = "must not start or end with whitespace";
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  else if (/[\u0000-\u001f\u007f]/.test(tag)) problem = "must not contain control characters";
  if (problem) throw badRequest(`tag ${problem}`, [{ path, message: problem }]);
}

async function requireCase(ctx: AppContext, tenantId: string, caseId: string): Promise<void> {
  if (!(await caseExists(ctx.db.root, tenantId, caseId))) throw notFound("case");
}

export async function getCaseTags(ctx: AppContext, tenantId: string, caseId: string): Promise<TagView[]> {
  await requireCase(ctx, tenantId, caseId);
  return (await listCaseTags(ctx.db.root, tenantId, caseId)).map(toTagView);
}

/** Applies a tag: `created` false when the case already carried it (the original is returned). */
export async function applyTag(
  ctx: AppContext,
  tenantId: string,
  actor: Actor,
  caseId: string,
  tag: string,
): Promise<{ created: boolean; tag: TagView }> {
  checkTag(tag, "tag");
  return ctx.db.transaction(async (tx) => {
    // The case's lock makes the count and the insert one step for concurrent adds.
    if (!(await lockCase(tx, tenantId, caseId))) throw notFound("case");
    const inserted = await insertCaseTagIfAllowed(
      tx,
      tenantId,
      caseId,
      tag,
      actorLabel(actor),
      TAG_LIMITS.perCase,
    );
    if (inserted) {
      await insertAudit(tx, { tenantId, actor: actorLabel(actor) }, "case.tag_add", `case:${caseId}`, {
        after: { tag },
      });
      return { created: true, tag: toTagView(inserted) };
    }
    const existing = await findCaseTag(tx, tenantId, caseId, tag);
    if (existing) return { created: false, tag: toTagView(existing) };
    if (!(await isTagOptionEnabled(tx, tenantId, tag))) {
      throw new AppError(
        "invalid_request",
        `tag "${tag}" is not an enabled option of the tenant's tag vocabulary`,
        { details: [{ path: "tag", message: "is not an enabled tag option" }] },
      );
    }
    throw new AppError(
      "tag_limit_reached",
      `the case already carries ${TAG_LIMITS.perCase} tags, the most a case can carry; remove one first`,
    );
  });
}

/** Removes a tag from a case; the audit row (by `actor`) commits with the removal. */
export async function removeTag(
  ctx: AppContext,
  tenantId: string,
  caseId: string,
  tag: string,
  actor: Actor,
): Promise<void> {
  checkTag(tag, "tag");
  await requireCase(ctx, tenantId, caseId);
  await ctx.db.transaction(async (tx) => {
    if (!(await deleteCaseTag(tx, tenantId, caseId, tag))) return;
    await insertAudit(tx, { tenantId, actor: actorLabel(actor) }, "case.tag_remove", `case:${caseId}`, {
      before: { tag },
    });
  });
}

/** The audit row of a change to the vocabulary, whatever the door. */
export const tagOptionAudit = (by: AuditBy, tag: string) =>
  audited<{ before: TagOptionView | undefined; after: TagOptionView }>(
    by,
    "tag_option.set",
    `tag:${tag}`,
    ({ before, after }) => ({
      before: before ? { enabled: before.enabled } : undefined,
      after: { enabled: after.enabled },
    }),
  );

export async function setTagOption(
  ctx: AppContext,
  tenantId: string,
  tag: string,
  enabled: boolean,
  also?: InSameTransaction<{ before: TagOptionView | undefined; after: TagOptionView }>,
): Promise<TagOptionView> {
  checkTag(tag, "tag");
  await requireTenant(ctx.db.root, tenantId);
  if (!also) return toOptionView(await upsertTagOption(ctx.db.root, tenantId, tag, enabled));
  return ctx.db.transaction(async (tx) => {
    const before = (await listTagOptions(tx, tenantId)).find((o) => o.tag === tag);
    const after = toOptionView(await upsertTagOption(tx, tenantId, tag, enabled));
    await also(tx, { before: before && toOptionView(before), after });
    return after;
  });
}

export async function getTagOptions(ctx: AppContext, tenantId: string): Promise<TagOptionView[]> {
  await requireTenant(ctx.db.root, tenantId);
  return (await listTagOptions(ctx.db.root, tenantId)).map(toOptionView);
}
