-- Webhook deliveries and their attempts. A delivery is one event sent to one configuration
-- with one webhookId: the body is serialized once, when the delivery is created, and every
-- attempt sends those bytes. A manual redelivery is a new delivery (a fresh webhookId) that
-- points at the one it repeats.

CREATE TABLE webhook_deliveries (
  id                 uuid PRIMARY KEY,
  -- Orders the delivery log newest first and pages it exactly (a timestamp can tie).
  seq                bigserial NOT NULL,
  tenant_id          uuid NOT NULL REFERENCES tenants (id),
  event_id           uuid NOT NULL REFERENCES events (id),
  case_id            uuid,
  event_type         text NOT NULL,
  -- The configuration the event is routed to: 'default' or the event's webhook key.
  webhook_key        text NOT NULL,
  webhook_id         uuid NOT NULL,
  body               text NOT NULL,
  status             text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
  -- Attempts started (counted before the request goes out) and attempts whose outcome was
  -- recorded; they differ only when a delivering process died mid-attempt.
  attempt_count      integer NOT NULL DEFAULT 0,
  recorded_attempts  integer NOT NULL DEFAULT 0,
  next_attempt_at    timestamptz,
  last_attempt_at    timestamptz,
  last_status_code   integer,
  last_error         text,
  redelivery_of      uuid REFERENCES webhook_deliveries (id),
  -- The latest manual redelivery of this one, so that "redeliver every failed delivery" sends
  -- each event once, however often it is asked.
  superseded_by      uuid,
  created_at         timestamptz NOT NULL DEFAULT now(),
  completed_at       timestamptz
);
CREATE UNIQUE INDEX webhook_deliveries_seq ON webhook_deliveries (seq);
CREATE INDEX webhook_deliveries_tenant ON webhook_deliveries (tenant_id, seq DESC);
CREATE INDEX webhook_deliveries_tenant_status ON webhook_deliveries (tenant_id, status, seq DESC);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id, seq DESC);
CREATE INDEX webhook_deliveries_case ON webhook_deliveries (case_id) WHERE case_id IS NOT NULL;

CREATE TABLE webhook_attempts (
  delivery_id    uuid NOT NULL REFERENCES webhook_deliveries (id),
  attempt        integer NOT NULL,
  tenant_id      uuid NOT NULL,
  started_at     timestamptz NOT NULL,
  -- Where the attempt went, without the query string (it may carry a partner's token).
  target         text,
  secret_id      text,
  status_code    integer,
  latency_ms     integer,
  error          text,
  response_body  text,
  PRIMARY KEY (delivery_id, attempt)
);
