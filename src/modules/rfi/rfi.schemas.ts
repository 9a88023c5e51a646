import { Type } from "typebox";
import { named } from "../../platform/openapi.js";
import { RFI_LIMITS } from "./rfi.limits.js";

const Address = Type.String({ format: "email", minLength: 3, maxLength: RFI_LIMITS.addressLength });

/** What a request says, however it is raised: the texts the partner's system e-mails. */
export const RequestTexts = {
  to: Address,
  cc: Type.Optional(Type.Array(Address, { maxItems: RFI_LIMITS.ccAddresses })),
  subject: Type.String({ minLength: 1, maxLength: RFI_LIMITS.subjectLength }),
  body: Type.String({ minLength: 1, maxLength: RFI_LIMITS.bodyLength }),
  templateId: Type.Optional(Type.String({ minLength: 1, maxLength: RFI_LIMITS.templateIdLength })),
  webhookKey: Type.Optional(Type.String({ minLength: 1, maxLength: RFI_LIMITS.webhookKeyLength })),
};

const ExpiresAt = Type.Optional(
  Type.String({
    format: "date-time",
    description: `Deadline (RFC 3339, at most ${RFI_LIMITS.maxDeadlineDays} days ahead); the request expires then`,
  }),
);

export const RaiseBody = Type.Object({ ...RequestTexts, expiresAt: ExpiresAt });

export const AdminRaiseBody = Type.Object({
  ...RequestTexts,
  expiresAt: ExpiresAt,
  actor: Type.String({
    minLength: 1,
    maxLength: RFI_LIMITS.actorLength,
    description: "The analyst's user id: `requested_by` becomes `analyst:<actor>`",
  }),
});

/** Node texts are checked against the same rules as API ones (CEL may produce anything). */
export const NodeTexts = Type.Object(RequestTexts);

export const MintBody = Type.Object({
  filename: Type.String({ description: `At most ${RFI_LIMITS.filenameBytes} bytes (UTF-8)` }),
  contentType: Type.Union(RFI_LIMITS.contentTypes.map((t) => Type.Literal(t))),
  sizeBytes: Type.Integer({ minimum: RFI_LIMITS.fileMinBytes, maximum: RFI_LIMITS.fileMaxBytes }),
});

const FieldInput = Type.Object({
  key: Type.String({ pattern: "^[A-Za-z_][A-Za-z0-9_]*$" }),
  value: Type.Optional(Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()])),
  label: Type.Optional(Type.String({ description: `At most ${RFI_LIMITS.labelBytes} bytes` })),
});

const DocumentInput = Type.Object({
  uploadId: Type.String({ format: "uuid" }),
  label: Type.Optional(Type.String({ description: `At most ${RFI_LIMITS.labelBytes} bytes` })),
});

export const AnswerBody = Type.Object({
  fields: Type.Optional(Type.Array(FieldInput, { maxItems: RFI_LIMITS.fieldsPerAnswer })),
  documents: Type.Optional(Type.Array(DocumentInput, { maxItems: RFI_LIMITS.documentsPerAnswer })),
});

export const AdminAnswerBody = Type.Object({
  fields: Type.Optional(Type.Array(FieldInput, { maxItems: RFI_LIMITS.fieldsPerAnswer })),
  documents: Type.Optional(Type.Array(DocumentInput, { maxItems: RFI_LIMITS.documentsPerAnswer })),
  actor: Type.String({ minLength: 1, maxLength: RFI_LIMITS.actorLength }),
});

named({
  InformationRequestInput: RaiseBody,
  AnalystInformationRequestInput: AdminRaiseBody,
  UploadSlotRequest: MintBody,
  RFIAnswer: AnswerBody,
  AnalystRFIAnswer: AdminAnswerBody,
});
