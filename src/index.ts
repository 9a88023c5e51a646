/** What the package offers to code outside the service: partners on Node verify webhooks with it. */
export {
  SECRET_ID_HEADER,
  SIGNATURE_HEADER,
  signWebhookBody,
  type VerifyWebhookInput,
  verifyWebhook,
  type WebhookHeaders,
  type WebhookSecrets,
} from "./verify-webhook.js";
