-- Verification providers (brokers): each tenant's configuration of a vendor, the runs of
-- provider nodes, every call made to a vendor, and the events vendors send. What is common to
-- every broker lives here, so that a new vendor needs no table of its own.

CREATE TABLE provider_configs (
  tenant_id              uuid NOT NULL REFERENCES tenants (id),
  broker_id              text NOT NULL,
  base_url               text NOT NULL,
  -- The credentials as a JSON object, sealed with AES-256-GCM under CDS_SECRET_KEY.
  credentials_sealed     text NOT NULL,
  -- The secret that verifies the vendor's webhooks, sealed likewise; null when none is set.
  webhook_secret_sealed  text,
  -- The last part of the inbound webhook URL the vendor is given: it names the tenant and
  -- broker of an event; the digest, not the token, authenticates it.
  inbound_token          text NOT NULL,
  timeout_ms             integer NOT NULL DEFAULT 10000,
  created_at             timestamptz NOT NULL DEFAULT now(),
  updated_at             timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, broker_id)
);
CREATE UNIQUE INDEX provider_configs_inbound_token ON provider_configs (inbound_token);

-- One run per provider node a case entered (a node entered again on a later step is a new run).
CREATE TABLE provider_runs (
  id                uuid PRIMARY KEY,
  tenant_id         uuid NOT NULL REFERENCES tenants (id),
  case_id           uuid NOT NULL,
  node_id           text NOT NULL,
  seq               integer NOT NULL,
  broker_id         text NOT NULL,
  status            text NOT NULL CHECK (status IN ('waiting', 'completed', 'failed', 'timed_out', 'ended')),
  -- The wait of a paused run: its id is the pending handle partners use with endpoint 5.
  wait_id           uuid,
  expires_at        timestamptz,
  -- The vendor's id of the subject being verified (a Sumsub applicant id), once known.
  subject_ref       text,
  -- The node's config as it ran (pending and durable actions use it after the node).
  config            jsonb NOT NULL DEFAULT '{}',
  -- The broker's own state between calls (the vendor's user id); never tokens.
  state             jsonb NOT NULL DEFAULT '{}',
  output            jsonb,
  error             text,
  -- The vendor's time of the newest event applied to the run: an older event arriving late is ignored.
  last_event_at     timestamptz,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, case_id, seq)
);
CREATE UNIQUE INDEX provider_runs_wait ON provider_runs (tenant_id, wait_id) WHERE wait_id IS NOT NULL;
CREATE INDEX provider_runs_subject ON provider_runs (tenant_id, broker_id, subject_ref)
  WHERE subject_ref IS NOT NULL;

-- Every HTTP call made to a vendor, attempt by attempt: what, for whom, how it went. Never
-- tokens, links or personal data.
CREATE TABLE provider_calls (
  id           bigserial PRIMARY KEY,
  tenant_id    uuid NOT NULL,
  broker_id    text NOT NULL,
  case_id      uuid,
  run_id       uuid,
  action       text NOT NULL,
  -- `node:<nodeId>`, `apikey:<keyId>` or `system`.
  actor        text NOT NULL,
  attempt      integer NOT NULL,
  http_status  integer,
  duration_ms  integer NOT NULL,
  outcome      text NOT NULL CHECK (outcome IN ('ok', 'rejected', 'failed')),
  error        text,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX provider_calls_case ON provider_calls (tenant_id, case_id, id) WHERE case_id IS NOT NULL;

-- Events vendors sent to the inbound webhook URL, stored before they are answered and handled
-- by a job. A body delivered twice (a vendor's retry) is stored once.
CREATE TABLE provider_events (
  id            uuid PRIMARY KEY,
  tenant_id     uuid NOT NULL REFERENCES tenants (id),
  broker_id     text NOT NULL,
  digest        text NOT NULL,
  event_type    text NOT NULL,
  subject_ref   text,
  occurred_at   timestamptz,
  body          jsonb NOT NULL,
  received_at   timestamptz NOT NULL DEFAULT now(),
  handled_at    timestamptz,
  -- What handling did: `resolved`, `retry_requested`, `ignored: <why>`.
  outcome       text,
  UNIQUE (tenant_id, broker_id, digest)
);

-- Webhook signing secrets are sealed like credentials. Rows stored before this migration hold
-- them in clear until the start that follows seals them (docs/decisions/0012-secrets-at-rest.md).
ALTER TABLE webhook_configs ADD COLUMN secrets_sealed boolean NOT NULL DEFAULT false;
