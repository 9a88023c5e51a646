/**
 * The events outbox: what happened to a case, recorded in the transaction of the change, each
 * with the webhook delivery it causes. It has no routes of its own: webhooks deliver its rows.
 */
export {
  /** The event types of the spec's Events section, `case.failed` and `webhook.test`. */
  EVENT_TYPES,
  /** Records one event and its first webhook delivery in the caller's transaction. */
  emitEvent,
  /** `emitEvent` for many events in one statement. */
  emitEvents,
  /** An event to record: its type, case, webhook configuration and payload. */
  type NewEvent,
} from "./events.js";
