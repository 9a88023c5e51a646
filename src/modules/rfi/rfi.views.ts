import { Type } from "typebox";
import { errorResponse, named } from "../../platform/openapi.js";
import { DocumentSchema, FieldValueSchema, InformationRequestSchema } from "../case-model/index.js";
import type { RfiRow, SlotRow } from "./rfi.repo.js";
import type { AnswerSource, RfiSource, RfiStatus } from "./rfi.tables.js";

/** An information request as partners and operators read it. */
export interface InformationRequestView {
  rfiId: string;
  caseId: string;
  status: RfiStatus;
  source: RfiSource;
  requestedBy: string;
  to: string;
  cc: string[];
  subject: string;
  body: string;
  templateId: string | null;
  webhookKey: string | null;
  awaitsResponse: boolean;
  expiresAt: string | null;
  uploadSlotsMinted: number;
  reminderCount: number;
  lastRemindedAt: string | null;
  cancelledAt: string | null;
  cancelledBy: string | null;
  expiredAt: string | null;
  createdAt: string;
  updatedAt: string;
  answer: AnswerView | null;
}

export interface AnswerView {
  answeredAt: string;
  /** `apikey:<keyId>` or `analyst:<userId>`. */
  answeredBy: string;
  source: AnswerSource;
  fields: Array<{ key: string; value: string | number | boolean | null; label: string | null }>;
  documents: DocumentView[];
}

export interface DocumentView {
  uploadId: string;
  filename: string;
  contentType: string;
  sizeBytes: number;
  label: string | null;
  attachedAt: string;
}

const iso = (d: Date | null): string | null => d?.toISOString() ?? null;

export function toDocumentView(slot: SlotRow): DocumentView {
  return {
    uploadId: slot.id,
    filename: slot.filename,
    contentType: slot.content_type,
    sizeBytes: slot.size_bytes,
    label: slot.label,
    attachedAt: (slot.attached_at as Date).toISOString(),
  };
}

export function toRequestView(row: RfiRow, attached: SlotRow[]): InformationRequestView {
  const answered = row.status === "answered" && row.answered_at && row.answered_by && row.answer_source;
  return {
    rfiId: row.id,
    caseId: row.case_id,
    status: row.status,
    source: row.source,
    requestedBy: row.requested_by,
    to: row.recipient,
    cc: row.cc ?? [],
    subject: row.subject,
    body: row.body,
    templateId: row.template_id,
    webhookKey: row.webhook_key,
    awaitsResponse: row.awaits_response,
    expiresAt: iso(row.expires_at),
    uploadSlotsMinted: row.slots_minted,
    reminderCount: row.reminder_count,
    lastRemindedAt: iso(row.last_reminded_at),
    cancelledAt: iso(row.cancelled_at),
    cancelledBy: row.cancelled_by,
    expiredAt: iso(row.expired_at),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    answer: answered
      ? {
          answeredAt: (row.answered_at as Date).toISOString(),
          answeredBy: row.answered_by as string,
          source: row.answer_source as AnswerSource,
          fields: (row.answer_fields ?? []).map((f) => ({
            key: f.key,
            value: f.value,
            label: f.label ?? null,
          })),
          documents: attached.filter((s) => s.rfi_id === row.id).map(toDocumentView),
        }
      : null,
  };
}

const Timestamp = Type.String({ format: "date-time" });

export { DocumentSchema, FieldValueSchema, InformationRequestSchema };

export const AnswerResultSchema = Type.Object({
  rfiId: Type.String({ format: "uuid" }),
  status: Type.Literal("answered"),
  answeredAt: Timestamp,
  fieldCount: Type.Integer(),
  documentCount: Type.Integer(),
});

export const UploadSlotSchema = Type.Object({
  uploadId: Type.String({ format: "uuid" }),
  uploadUrl: Type.String({
    format: "uri",
    description: [
      "An opaque, signed URL for one create-only upload: `PUT` the file's bytes to it exactly as given",
      "(do not parse or rebuild it), before `expiresAt`, with the declared `Content-Type` and",
      "`Content-Length` and `If-None-Match: *`. No API key. 200 once stored; 403 for a wrong",
      "signature, type, length, a missing `If-None-Match` or an expired URL; 400 for a body whose",
      "length differs from the declared size; 412 when the slot already holds a file. Errors are",
      "`RFIError` bodies.",
    ].join(" "),
  }),
  expiresAt: Timestamp,
});

/** The answers of both answer routes (the partner's, and the operator's for an analyst). */
export const ANSWER_RESPONSES = {
  200: AnswerResultSchema,
  409: errorResponse("`already_answered`, `not_pending`, `case_terminal` or `dry_run`", "rfi"),
  422: errorResponse(
    "`document_not_uploaded`, `invalid_field_key`, `invalid_field_value`, `fields_too_large` or `too_many_documents`",
    "rfi",
  ),
  503: errorResponse("`unavailable`: document storage cannot be reached to check the documents", "rfi"),
};

named({
  AnswerResult: AnswerResultSchema,
  UploadSlot: UploadSlotSchema,
});
