import { Type } from "typebox";
import { named } from "../../platform/openapi.js";
import {
  CASE_STATUSES,
  CASE_TYPES,
  DECISION_VALUES,
  Decision,
  InformationRequestSchema,
} from "../case-model/index.js";

export { Decision };

/**
 * The JSON shapes of the cases endpoints, as route schemas (request validation and the OpenAPI
 * document). Rules a schema cannot state (currency and country codes, the sub-struct matching
 * `type`, timestamps) are checked in cases.validation.ts.
 */
const literals = <const T extends readonly string[]>(values: T) => Type.Enum(values);

export const IDENTIFIER_TYPES = [
  "external_customer_id",
  "email",
  "phone",
  "iban",
  "account_number",
  "card_fingerprint",
  "national_id",
  "tax_id",
  "registration_number",
  "device_id",
  "ip_address",
] as const;

export const Identifier = Type.Object(
  {
    type: literals(IDENTIFIER_TYPES),
    value: Type.String({ minLength: 1, maxLength: 256 }),
    country: Type.Optional(Type.String({ description: "ISO 3166-1 alpha-2" })),
  },
  { additionalProperties: false },
);

const Identifiers = Type.Array(Identifier, { maxItems: 50 });

export const Address = Type.Object(
  {
    line1: Type.Optional(Type.String({ maxLength: 256 })),
    line2: Type.Optional(Type.String({ maxLength: 256 })),
    city: Type.Optional(Type.String({ maxLength: 128 })),
    postalCode: Type.Optional(Type.String({ maxLength: 32 })),
    region: Type.Optional(Type.String({ maxLength: 128 })),
    country: Type.Optional(Type.String({ description: "ISO 3166-1 alpha-2" })),
  },
  { additionalProperties: false },
);

/** What a person and a business both end with: where they are, and their identifiers. */
const whereAndWho = { address: Type.Optional(Address), identifiers: Type.Optional(Identifiers) };

export const Person = Type.Object(
  {
    firstName: Type.Optional(Type.String({ maxLength: 256 })),
    lastName: Type.Optional(Type.String({ maxLength: 256 })),
    dateOfBirth: Type.Optional(Type.String({ description: "YYYY-MM-DD" })),
    nationality: Type.Optional(Type.String({ description: "ISO 3166-1 alpha-2" })),
    email: Type.Optional(Type.String({ maxLength: 320 })),
    phone: Type.Optional(Type.String({ maxLength: 64 })),
    ...whereAndWho,
  },
  { additionalProperties: false },
);

export const Business = Type.Object(
  {
    legalName: Type.Optional(Type.String({ maxLength: 512 })),
    registrationNumber: Type.Optional(Type.String({ maxLength: 128 })),
    country: Type.Optional(Type.String({ description: "ISO 3166-1 alpha-2" })),
    incorporationDate: Type.Optional(Type.String({ description: "YYYY-MM-DD" })),
    ...whereAndWho,
  },
  { additionalProperties: false },
);

export const Party = Type.Object(
  {
    role: literals(["sender", "receiver", "merchant", "customer", "other"]),
    displayName: Type.Optional(Type.String({ maxLength: 512 })),
    identifiers: Type.Optional(Identifiers),
  },
  { additionalProperties: false },
);

export const TransactionSubject = Type.Object(
  {
    amount: Type.Number({ minimum: 0 }),
    currency: Type.String({ description: "ISO 4217 code" }),
    direction: Type.Optional(literals(["inbound", "outbound"])),
    method: Type.Optional(literals(["card", "bank_transfer", "wallet", "crypto", "cash", "other"])),
    type: Type.Optional(literals(["payment", "transfer", "withdrawal", "deposit", "refund", "other"])),
    externalTransactionId: Type.Optional(Type.String({ maxLength: 256 })),
    parties: Type.Optional(Type.Array(Party, { maxItems: 50 })),
  },
  { additionalProperties: false },
);

export const Subject = Type.Object(
  {
    displayName: Type.Optional(Type.String({ maxLength: 512 })),
    person: Type.Optional(Person),
    business: Type.Optional(Business),
    transaction: Type.Optional(TransactionSubject),
  },
  {
    additionalProperties: false,
    description: "Exactly one of person (KYC), business (KYB) or transaction (Transaction), matching `type`.",
  },
);

export const CaseSubmission = Type.Object(
  {
    workflowId: Type.String({ minLength: 1, maxLength: 64 }),
    workflowVersion: Type.Optional(Type.Integer({ minimum: 1 })),
    type: literals(CASE_TYPES),
    payload: Type.Optional(
      Type.Object(
        {},
        { additionalProperties: true, description: "Validated against the workflow's inputSchema" },
      ),
    ),
    subject: Subject,
    metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    idempotencyKey: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    eventTimestamp: Type.Optional(
      Type.String({ description: "RFC 3339 with an offset; required for Transaction cases" }),
    ),
    tenantId: Type.Optional(Type.Unknown({ description: "Ignored: the tenant comes from the API key" })),
  },
  { additionalProperties: false },
);

export const SubmissionResponse = Type.Object({
  caseId: Type.String({ format: "uuid" }),
  requestId: Type.String(),
  status: literals(CASE_STATUSES),
});

const Json = Type.Object({}, { additionalProperties: true });

export const CaseTag = Type.Object({
  tag: Type.String(),
  createdBy: Type.String({ description: "`apikey:<keyId>` or `analyst:<userId>`" }),
  createdAt: Type.String({ format: "date-time" }),
});
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) =>
  Type.Union([schema, Type.Null()]);

/** The fields a case record and a case summary both begin with (as `caseIdentity` in the service). */
const caseIdentity = () => ({
  caseId: Type.String({ format: "uuid" }),
  requestId: Type.String(),
  status: literals(CASE_STATUSES),
  type: literals(CASE_TYPES),
  workflowId: Type.String(),
  workflowVersion: Type.Integer(),
});

export const CaseRecord = Type.Object({
  ...caseIdentity(),
  subject: Subject,
  payload: Json,
  metadata: Json,
  externalCustomerId: Nullable(Type.String()),
  eventTimestamp: Nullable(Type.String({ format: "date-time" })),
  createdAt: Type.String({ format: "date-time" }),
  updatedAt: Type.String({ format: "date-time" }),
  dryRun: Type.Boolean(),
  result: Type.Object({
    decision: Nullable(Decision),
    decisionHistory: Type.Array(Decision),
    workflow_result: Nullable(Json),
  }),
  error: Nullable(Json),
  tags: Type.Array(CaseTag),
  informationRequests: Type.Array(InformationRequestSchema),
});

export const CaseSummary = Type.Object({
  ...caseIdentity(),
  displayName: Nullable(Type.String()),
  externalCustomerId: Nullable(Type.String()),
  decision: Nullable(Decision),
  dryRun: Type.Boolean(),
  createdAt: Type.String({ format: "date-time" }),
  updatedAt: Type.String({ format: "date-time" }),
});

export const CaseList = Type.Object({
  cases: Type.Array(CaseSummary),
  nextCursor: Type.Union([Type.String(), Type.Null()], {
    description: "Pass as `cursor` for the next page; null on the last",
  }),
});

export const CaseListQuery = Type.Object(
  {
    status: Type.Optional(literals(CASE_STATUSES)),
    type: Type.Optional(literals(CASE_TYPES)),
    workflowId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    decision: Type.Optional(literals(DECISION_VALUES)),
    tag: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    externalCustomerId: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    createdFrom: Type.Optional(Type.String({ description: "RFC 3339, inclusive" })),
    createdTo: Type.Optional(Type.String({ description: "RFC 3339, exclusive" })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 25 })),
    cursor: Type.Optional(Type.String({ maxLength: 200 })),
    dryRun: Type.Optional(
      Type.Boolean({ description: "true: only dry-run cases; absent or false: dry-run cases are left out" }),
    ),
  },
  { additionalProperties: false },
);

/** One entry of a case's trace (contract section 4): per node type, more facts beside these. */
export const TraceEntry = Type.Object(
  {
    seq: Type.Integer({ minimum: 1 }),
    nodeId: Type.String(),
    nodeType: Type.String(),
    status: Type.Union([Type.Literal("completed"), Type.Literal("waiting"), Type.Literal("failed")]),
    startedAt: Type.String({ format: "date-time" }),
    finishedAt: Nullable(Type.String({ format: "date-time" })),
    output: Type.Unknown(),
    next: Nullable(Type.String()),
    error: Type.Optional(Type.Object({ message: Type.String() })),
  },
  {
    additionalProperties: true,
    description:
      "Why the node went where it went, by node type: `rules` and `decision`: `matched` (the index " +
      'of the first rule or case that held, or "default"); `score`: `score`, `contributions` ' +
      "(`[{index, points}]` for every rule that held) and `band` (the index of the band that decided); " +
      "`provider`: `brokerId` and `calls`, the vendor calls the node made (`{action, attempt, httpStatus, " +
      "durationMs, outcome, actor}`); `actionCalls`, the vendor calls made by pending and durable actions on " +
      "the node's run, after the decision too (`{action, actor, attempt, httpStatus, durationMs, outcome, at}`); " +
      "and on a screening broker's last step, `verdicts`, the analysts' verdicts on its hits made on this case " +
      "(`{hitId, verdict: match | no_match, reason, actor, at}`). Never tokens, links or personal data.",
  },
);

/** The case record of `GET /cases/{caseId}`, for operators: with its tenant and its trace. */
export const AdminCaseRecord = Type.Object({
  ...CaseRecord.properties,
  tenantId: Type.String({ format: "uuid" }),
  trace: Type.Array(TraceEntry),
});

export const AdminCaseSummary = Type.Object({
  ...CaseSummary.properties,
  tenantId: Type.String({ format: "uuid" }),
});

export const AdminCaseListQuery = Type.Object(
  {
    ...CaseListQuery.properties,
    tenantId: Type.Optional(Type.String({ format: "uuid", description: "Only this tenant's cases" })),
    dryRun: Type.Optional(
      Type.Boolean({ description: "true: only dry-run cases; absent or false: dry-run cases are left out" }),
    ),
  },
  { additionalProperties: false },
);

named({
  Identifier,
  Address,
  Person,
  Business,
  Party,
  Transaction: TransactionSubject,
  Subject,
  CaseSubmission,
  CaseSubmitted: SubmissionResponse,
  Decision,
  Tag: CaseTag,
  Case: CaseRecord,
  CaseSummary,
  CaseList,
});
