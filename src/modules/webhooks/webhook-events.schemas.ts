import { type TSchema, Type } from "typebox";
import { Decision } from "../case-model/index.js";

/**
 * The webhook events as the OpenAPI document's `webhooks` section: each event's body schema
 * (exactly the fields the service sends, in their key styles) and the signature headers.
 */
const Uuid = Type.String({ format: "uuid" });
const Timestamp = Type.String({ format: "date-time" });
const WebhookId = Type.String({
  format: "uuid",
  description:
    "This delivery; retries resend it, a redelivery or reminder has a fresh one. Always the first field.",
});
const Json = Type.Object({}, { additionalProperties: true });

const ResultEnvelope = Type.Object(
  {
    decision: Type.Union([Decision, Type.Null()], { description: "The current decision" }),
    decisionHistory: Type.Array(Decision, {
      description: "Entry 0 the workflow's decision, then every override",
    }),
    workflow_result: Type.Union([Json, Type.Null()], {
      description: "The variables of the deciding node; never changed by overrides",
    }),
  },
  { title: "DecisionResult" },
);

const decisionEvent = (type: string, title: string, description: string) =>
  Type.Object(
    {
      webhookId: WebhookId,
      event_type: Type.Literal(type),
      case_id: Uuid,
      external_customer_id: Type.Optional(Type.String({ description: "Only when the case carries one" })),
      tenant_id: Uuid,
      result: ResultEnvelope,
      timestamp: Type.String({ format: "date-time", description: "When the decision was made" }),
    },
    { title, description },
  );

const CaseDecided = decisionEvent(
  "case.decided",
  "CaseDecidedEvent",
  "The workflow finished with `approved` or `declined`.",
);
const CasePendingReview = decisionEvent(
  "case.pending_review",
  "CasePendingReviewEvent",
  "The workflow finished with `in_review`.",
);
const CaseDecisionOverridden = decisionEvent(
  "case.decision_overridden",
  "CaseDecisionOverriddenEvent",
  "An analyst overrode the decision: `result.decision` is theirs, one more entry in `decisionHistory`.",
);

const CaseFailed = Type.Object(
  {
    webhookId: WebhookId,
    event_type: Type.Literal("case.failed"),
    case_id: Uuid,
    external_customer_id: Type.Optional(Type.String({ description: "Only when the case carries one" })),
    tenant_id: Uuid,
    error: Type.Object({
      nodeId: Type.Union([Type.String(), Type.Null()], { description: "The node that failed, when one did" }),
      message: Type.String(),
    }),
    timestamp: Type.String({ format: "date-time", description: "When the case failed" }),
  },
  {
    title: "CaseFailedEvent",
    description: "The workflow errored and the case ended `failed`, with no decision.",
  },
);

const CallbackDispatch = Type.Object(
  {
    webhookId: WebhookId,
    event_type: Type.Literal("external_callback.dispatch"),
    tenantId: Uuid,
    caseId: Uuid,
    nodeId: Type.String({ description: "The paused node" }),
    webhookKey: Type.Union([Type.String(), Type.Null()], { description: "The named configuration, or null" }),
    callbackUrl: Type.String({
      format: "uri",
      description: "Post your result here, once, before `expiresAt`",
    }),
    expiresAt: Timestamp,
    payload: Json,
  },
  {
    title: "ExternalCallbackDispatchEvent",
    description: "A workflow node paused until your system posts a callback.",
  },
);

const NodeNotification = Type.Object(
  {
    webhookId: WebhookId,
    event_type: Type.Literal("node.notification"),
    payloadType: Type.Optional(Type.String({ description: "Names the shape of `output`, when configured" })),
    tag: Type.Optional(Type.String()),
    tenantId: Uuid,
    caseId: Uuid,
    nodeId: Type.String(),
    webhookKey: Type.Union([Type.String(), Type.Null()]),
    output: Json,
  },
  { title: "NodeNotificationEvent", description: "A workflow node emitted output mid-run." },
);

const RfiRequested = Type.Object(
  {
    webhookId: WebhookId,
    event_type: Type.Literal("case.rfi_requested"),
    tenant_id: Uuid,
    case_id: Uuid,
    rfi_id: Uuid,
    case_type: Type.Enum(["KYC", "KYB", "Transaction"]),
    to: Type.String(),
    subject: Type.String(),
    body: Type.String(),
    requested_by: Type.String({ description: "`analyst:<userId>`, `node:<nodeId>` or `apikey:<keyId>`" }),
    source: Type.Enum(["analyst", "workflow", "api"]),
    template_id: Type.Optional(Type.String()),
    cc: Type.Optional(Type.Array(Type.String())),
    webhook_key: Type.Optional(Type.String()),
    awaits_response: Type.Optional(Type.Literal(true)),
    response_expires_at: Type.Optional(Timestamp),
    timestamp: Type.String({
      format: "date-time",
      description: "When raised, or when the reminder was sent",
    }),
  },
  {
    title: "RfiRequestedEvent",
    description:
      "An information request was raised, or raised again as a reminder. Deduplicate by (`event_type`, `rfi_id`).",
  },
);

const RfiAnswered = Type.Object(
  {
    webhookId: WebhookId,
    event_type: Type.Literal("case.rfi_answered"),
    tenant_id: Uuid,
    case_id: Uuid,
    rfi_id: Uuid,
    source: Type.Enum(["rfi_response", "analyst"]),
    answered_by: Type.String({ description: "`apikey:<keyId>` or `analyst:<userId>`" }),
    field_count: Type.Integer(),
    document_count: Type.Integer(),
    webhook_key: Type.Optional(Type.String()),
    timestamp: Type.String({ format: "date-time", description: "When it was answered" }),
  },
  {
    title: "RfiAnsweredEvent",
    description:
      "An information request was answered; read the answer with the API. Deduplicate by (`event_type`, `rfi_id`).",
  },
);

export const WEBHOOK_EVENT_SCHEMAS: Record<string, TSchema> = {
  "case.decided": CaseDecided,
  "case.pending_review": CasePendingReview,
  "case.decision_overridden": CaseDecisionOverridden,
  "case.failed": CaseFailed,
  "external_callback.dispatch": CallbackDispatch,
  "node.notification": NodeNotification,
  "case.rfi_requested": RfiRequested,
  "case.rfi_answered": RfiAnswered,
};

const SIGNATURE_HEADERS = [
  {
    name: "X-Service-Signature",
    in: "header",
    required: true,
    description: "Hex HMAC-SHA256 of the exact body bytes, keyed by the configuration's active secret",
    schema: { type: "string", pattern: "^[0-9a-f]{64}$" },
  },
  {
    name: "X-Service-Secret-ID",
    in: "header",
    required: false,
    description: "The id of the signing secret; absent only when the one secret has no id",
    schema: { type: "string" },
  },
];

/** The OpenAPI `webhooks` section. */
export function webhooksSection(): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(WEBHOOK_EVENT_SCHEMAS).map(([type, schema]) => [
      type,
      {
        post: {
          operationId: `webhook_${type.replace(/\./g, "_")}`,
          tags: ["webhooks"],
          summary: `The ${type} event`,
          description:
            `${(schema as { description?: string }).description ?? ""} Verify the signature on the raw body before parsing it.`.trim(),
          // Authenticated by the HMAC signature headers, not by a security scheme of the API.
          security: [],
          parameters: SIGNATURE_HEADERS,
          requestBody: { required: true, content: { "application/json": { schema } } },
          responses: {
            "2XX": { description: "Received; any 2xx within the timeout counts as delivered" },
            default: {
              description: "Anything else (or no answer in time) is a failed attempt, retried with backoff",
            },
          },
        },
      },
    ]),
  );
}
