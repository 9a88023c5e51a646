import type { Readable } from "node:stream";
import type { AppContext } from "../../platform/context.js";
import { uuid } from "../../platform/crypto.js";
import { AppError, notFound } from "../../platform/errors.js";
import { RFI_LIMITS, utf8Bytes } from "./rfi.limits.js";
import { countSlotOnCase, countSlotOnRequest, findCaseSlot, insertSlot } from "./rfi.repo.js";
import { checkCaseOpen, checkPending, requireCase, requireRequest, tenantOfCase } from "./rfi.service.js";

export interface MintInput {
  filename: string;
  contentType: string;
  sizeBytes: number;
}

export interface UploadSlotView {
  uploadId: string;
  uploadUrl: string;
  expiresAt: string;
}

const invalid = (message: string) => new AppError("invalid_request", message);

/** Endpoint 12's body, checked after the request was found open to uploads. */
export function parseMintInput(body: unknown): MintInput {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw invalid("the body must be a JSON object with filename, contentType and sizeBytes");
  }
  const { filename, contentType, sizeBytes } = body as Record<string, unknown>;
  if (typeof filename !== "string" || filename.length === 0) {
    throw invalid("filename is required and must be a non-empty string");
  }
  if (utf8Bytes(filename) > RFI_LIMITS.filenameBytes) {
    throw invalid(
      `filename is ${utf8Bytes(filename)} bytes as UTF-8; the limit is ${RFI_LIMITS.filenameBytes}`,
    );
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  if (/[\u0000-\u001f\u007f]/.test(filename)) throw invalid("filename must not contain control characters");
  if (typeof contentType !== "string" || !RFI_LIMITS.contentTypes.includes(contentType)) {
    throw invalid(`contentType must be one of ${RFI_LIMITS.contentTypes.join(", ")}`);
  }
  if (
    typeof sizeBytes !== "number" ||
    !Number.isInteger(sizeBytes) ||
    sizeBytes < RFI_LIMITS.fileMinBytes ||
    sizeBytes > RFI_LIMITS.fileMaxBytes
  ) {
    throw invalid(
      `sizeBytes must be an integer from ${RFI_LIMITS.fileMinBytes} to ${RFI_LIMITS.fileMaxBytes}: the file's exact length`,
    );
  }
  return { filename, contentType, sizeBytes };
}

function limitReached(message: string): AppError {
  return new AppError("upload_limit_reached", message);
}

/**
 * Mints an upload slot (endpoint 12). The request's row lock and the case's budget row make the
 * two budgets (30 per request, 100 per case, every mint counted for good) exact under any
 * concurrency. The URL is signed after the slot is committed.
 */
export async function mintUploadSlot(
  ctx: AppContext,
  tenantId: string,
  caseId: string,
  rfiId: string,
  body: unknown,
): Promise<UploadSlotView> {
  const slot = await ctx.db.transaction(async (tx) => {
    const request = await requireRequest(tx, tenantId, caseId, rfiId, true);
    checkCaseOpen(await requireCase(tx, tenantId, caseId));
    checkPending(request);
    const input = parseMintInput(body);
    if (request.slots_minted >= RFI_LIMITS.slotsPerRequest) {
      throw limitReached(
        `this information request has used all ${RFI_LIMITS.slotsPerRequest} of its upload slots (every minted slot counts)`,
      );
    }
    await countSlotOnRequest(tx, tenantId, rfiId);
    if (!(await countSlotOnCase(tx, tenantId, caseId, RFI_LIMITS.slotsPerCase))) {
      throw limitReached(
        `this case has used all ${RFI_LIMITS.slotsPerCase} of its upload slots (every minted slot counts)`,
      );
    }
    const id = uuid();
    // URLs carry their expiry in whole seconds; round up so the slot lives at least its TTL.
    const expiresAt = new Date(Math.ceil((Date.now() + ctx.config.uploadTtlSeconds * 1000) / 1000) * 1000);
    return insertSlot(tx, {
      id,
      tenantId,
      caseId,
      rfiId,
      objectKey: `rfi/${tenantId}/${caseId}/${id}`,
      filename: input.filename,
      contentType: input.contentType,
      sizeBytes: input.sizeBytes,
      expiresAt,
    });
  });
  const uploadUrl = await ctx.blobs.presignPut(ctx.db, {
    key: slot.object_key,
    contentType: slot.content_type,
    sizeBytes: slot.size_bytes,
    expiresAt: slot.expires_at,
  });
  return { uploadId: slot.id, uploadUrl, expiresAt: slot.expires_at.toISOString() };
}

export interface DocumentDownload {
  filename: string;
  contentType: string;
  sizeBytes: number;
  stream: Readable;
}

/** An uploaded document of the case, for an analyst (operator API). */
export async function openDocument(
  ctx: AppContext,
  caseId: string,
  uploadId: string,
): Promise<DocumentDownload> {
  const tenantId = await tenantOfCase(ctx, caseId);
  const slot = await findCaseSlot(ctx.db.root, tenantId, caseId, uploadId);
  if (!slot) throw notFound("document");
  const opened = await ctx.blobs.open(slot.object_key);
  if (!opened) throw notFound("document (nothing has been uploaded to this slot)");
  if (slot.etag !== null && opened.info.etag !== slot.etag) {
    // Written again through its upload URL on a server that ignores If-None-Match: these are
    // not the bytes that were attached, and they are never served as if they were.
    opened.stream.destroy();
    throw new AppError(
      "document_replaced",
      "the stored document was written again after it was attached; the attached bytes are no longer stored",
    );
  }
  return {
    filename: slot.filename,
    contentType: opened.info.contentType ?? slot.content_type,
    sizeBytes: opened.info.sizeBytes,
    stream: opened.stream,
  };
}
