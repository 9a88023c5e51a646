/** What the service package re-exports for code outside it; partners install @case-decisioning/verify-webhook instead. */
export {
  SECRET_ID_HEADER,
  SIGNATURE_HEADER,
  signWebhookBody,
  type VerifyWebhookInput,
  verifyWebhook,
  type WebhookHeaders,
  type WebhookSecrets,
} from "@case-decisioning/verify-webhook";
