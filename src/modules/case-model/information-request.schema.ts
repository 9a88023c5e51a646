import { type TSchema, Type } from "typebox";
import { named } from "../../platform/openapi.js";

// An information request as the case record and the RFI endpoints show it: the rfi module writes
// them, the cases module shows them in every case record, so the shape lives with both's kernel.

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const Timestamp = Type.String({ format: "date-time" });

export const DocumentSchema = Type.Object({
  uploadId: Type.String({ format: "uuid" }),
  filename: Type.String(),
  contentType: Type.String(),
  sizeBytes: Type.Integer(),
  label: Nullable(Type.String()),
  attachedAt: Timestamp,
});

export const FieldValueSchema = Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]);

export const InformationRequestSchema = Type.Object({
  rfiId: Type.String({ format: "uuid" }),
  caseId: Type.String({ format: "uuid" }),
  status: Type.Union([
    Type.Literal("pending"),
    Type.Literal("answered"),
    Type.Literal("expired"),
    Type.Literal("cancelled"),
  ]),
  source: Type.Union([Type.Literal("api"), Type.Literal("analyst"), Type.Literal("workflow")]),
  requestedBy: Type.String({ description: "`apikey:<keyId>`, `analyst:<userId>` or `node:<nodeId>`" }),
  to: Type.String(),
  cc: Type.Array(Type.String()),
  subject: Type.String(),
  body: Type.String(),
  templateId: Nullable(Type.String()),
  webhookKey: Nullable(Type.String()),
  awaitsResponse: Type.Boolean(),
  expiresAt: Nullable(Timestamp),
  uploadSlotsMinted: Type.Integer({ description: "Slots minted so far; at most 30, counted permanently" }),
  reminderCount: Type.Integer(),
  lastRemindedAt: Nullable(Timestamp),
  cancelledAt: Nullable(Timestamp),
  cancelledBy: Nullable(Type.String()),
  expiredAt: Nullable(Timestamp),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  answer: Nullable(
    Type.Object({
      answeredAt: Timestamp,
      answeredBy: Type.String({ description: "`apikey:<keyId>` or `analyst:<userId>`" }),
      source: Type.Union([Type.Literal("rfi_response"), Type.Literal("analyst")]),
      fields: Type.Array(
        Type.Object({ key: Type.String(), value: FieldValueSchema, label: Nullable(Type.String()) }),
      ),
      documents: Type.Array(DocumentSchema),
    }),
  ),
});

named({
  Document: DocumentSchema,
  InformationRequest: InformationRequestSchema,
});
