import type { BlobStore } from "../../platform/blobs/index.js";
import type { AppContext } from "../../platform/context.js";
import type { InSameTransaction, Tx } from "../../platform/db/index.js";
import { AppError } from "../../platform/errors.js";
import { resumeWait } from "../engine/index.js";
import { operatorBy } from "../users/index.js";
import { rfiAudit } from "./rfi.audit.js";
import { emitAnswered } from "./rfi.events.js";
import { RFI_LIMITS, RFI_WAIT } from "./rfi.limits.js";
import { attachSlot, closeRequest, findSlotsForAttach, type RfiRow, type SlotRow } from "./rfi.repo.js";
import { checkCaseOpen, checkPending, requireCase, requireRequest, tenantOfCase } from "./rfi.service.js";
import { type DocumentView, toDocumentView } from "./rfi.views.js";
import { type ParsedAnswer, parseAnswer } from "./rfi-answer.validation.js";

/** Who answers: a partner's key (endpoint 13) or an analyst through the operator API. */
export type Answerer = { kind: "apikey"; keyId: string } | { kind: "analyst"; userId: string };

export interface AnswerResult {
  rfiId: string;
  status: "answered";
  answeredAt: string;
  fieldCount: number;
  documentCount: number;
}

/**
 * `answeredBy` as `already_answered` reports it: the key, so that a retry after a lost response
 * recognises its own answer, or just `analyst` for an answer recorded by an analyst.
 */
function answeredByForConflict(row: RfiRow): string {
  return row.answer_source === "analyst" ? "analyst" : (row.answered_by ?? "");
}

function notUploaded(uploadId: string, message: string): AppError {
  return new AppError("document_not_uploaded", message, { extra: { uploadId } });
}

/**
 * Each document must name a slot minted for this request, unattached and unexpired, whose object
 * is stored with the declared size and content type. The first failing document (in the order
 * sent) fails the whole answer.
 */
async function checkDocuments(
  tx: Tx,
  blobs: BlobStore,
  row: RfiRow,
  documents: ParsedAnswer["documents"],
): Promise<Array<SlotRow & { stored_etag: string | null }>> {
  const slots = await findSlotsForAttach(
    tx,
    row.tenant_id,
    documents.map((d) => d.uploadId),
  );
  const byId = new Map(slots.map((s) => [s.id, s]));
  const stored = new Map(
    await Promise.all(
      slots
        .filter((s) => s.rfi_id === row.id)
        .map(async (s) => [s.id, await blobs.stat(s.object_key)] as const),
    ),
  );
  return documents.map(({ uploadId }, i) => {
    const slot = byId.get(uploadId);
    const at = `documents[${i}]`;
    if (!slot) throw notUploaded(uploadId, `${at}: no upload slot with this id was minted for this request`);
    if (slot.rfi_id !== row.id) {
      throw notUploaded(uploadId, `${at}: the upload slot was minted for another information request`);
    }
    if (slot.attached_at !== null)
      throw notUploaded(uploadId, `${at}: the upload is already attached to an answer`);
    if (slot.expired) {
      throw notUploaded(
        uploadId,
        `${at}: the upload slot expired at ${slot.expires_at.toISOString()}; mint a new slot and upload again`,
      );
    }
    const info = stored.get(slot.id);
    if (!info) {
      throw notUploaded(
        uploadId,
        `${at}: nothing has been uploaded to this slot yet; PUT the file to its uploadUrl first`,
      );
    }
    if (info.sizeBytes !== slot.size_bytes) {
      throw notUploaded(
        uploadId,
        `${at}: the stored object has ${info.sizeBytes} bytes, not the declared ${slot.size_bytes}`,
      );
    }
    if (info.contentType !== slot.content_type) {
      throw notUploaded(
        uploadId,
        `${at}: the stored object is not of the declared type ${slot.content_type}`,
      );
    }
    return { ...slot, stored_etag: info.etag };
  });
}

/**
 * Answers a request, all or nothing, in one transaction: the request row is locked first, so of
 * concurrent answers exactly one succeeds and the others see it answered. Checks run in the
 * contract's order: 404, 409 (`dry_run`, `case_terminal`, `already_answered`, `not_pending`),
 * 400 structure, 422 fields, 422 `too_many_documents`, 422 `document_not_uploaded`.
 */
export async function answerRequest(
  ctx: AppContext,
  tenantId: string,
  caseId: string,
  rfiId: string,
  by: Answerer,
  body: unknown,
  also?: InSameTransaction<AnswerResult>,
): Promise<AnswerResult> {
  return ctx.db.transaction(async (tx) => {
    const current = await requireRequest(tx, tenantId, caseId, rfiId, true);
    const kase = await requireCase(tx, tenantId, caseId);
    checkCaseOpen(kase);
    if (current.status === "answered") {
      throw new AppError("already_answered", "the information request has already been answered", {
        extra: {
          answeredBy: answeredByForConflict(current),
          answeredAt: (current.answered_at as Date).toISOString(),
        },
      });
    }
    checkPending(current);
    const answer = parseAnswer(body);
    const slots = await checkDocuments(tx, ctx.blobs, current, answer.documents);

    const answered = await closeRequest(tx, tenantId, rfiId, {
      status: "answered",
      answeredBy: by.kind === "apikey" ? `apikey:${by.keyId}` : `analyst:${by.userId}`,
      answerSource: by.kind === "apikey" ? "rfi_response" : "analyst",
      fields: answer.fields,
    });
    if (!answered) throw new Error("a locked pending request could not be answered");
    const documents: DocumentView[] = [];
    for (const [position, slot] of slots.entries()) {
      const label = answer.documents[position]?.label ?? null;
      await attachSlot(tx, tenantId, slot.id, position, label, slot.stored_etag);
      documents.push(toDocumentView({ ...slot, label, position, attached_at: answered.answered_at as Date }));
    }
    const counts = { fieldCount: answer.fields.length, documentCount: slots.length };
    await emitAnswered(tx, answered, counts, kase.dry_run);
    await resumeWait(
      ctx,
      tx,
      { tenantId, caseId, kind: RFI_WAIT, ref: rfiId },
      {
        kind: "answered",
        output: {
          status: "answered",
          fields: Object.fromEntries(answer.fields.map((f) => [f.key, f.value])),
          documents: documents.map((d) => ({ ...d })),
        },
      },
    );
    const result: AnswerResult = {
      rfiId,
      status: "answered",
      answeredAt: (answered.answered_at as Date).toISOString(),
      ...counts,
    };
    await also?.(tx, result);
    return result;
  });
}

/**
 * The operator API's answer: the analyst named by `actor` answers (`answered_by` `analyst:<actor>`),
 * audited as `operator:<actor>`.
 */
export async function answerAsAnalyst(
  ctx: AppContext,
  caseId: string,
  rfiId: string,
  body: unknown,
): Promise<AnswerResult> {
  const actor = (body as { actor?: unknown } | null)?.actor;
  if (typeof actor !== "string" || actor.trim() === "" || actor.length > RFI_LIMITS.actorLength) {
    throw new AppError(
      "invalid_request",
      `actor (the analyst's user id, 1 to ${RFI_LIMITS.actorLength} characters) is required`,
    );
  }
  const tenantId = await tenantOfCase(ctx, caseId);
  const audit = rfiAudit.answer(operatorBy(tenantId, actor), rfiId);
  return answerRequest(ctx, tenantId, caseId, rfiId, { kind: "analyst", userId: actor }, body, audit);
}
