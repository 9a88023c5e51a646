-- Foundation: tenants, API keys, the durable job queue, cases, tags, webhook configurations,
-- and the event outbox. Nothing here may need a PostgreSQL newer than 15.

CREATE TABLE tenants (
  id          uuid PRIMARY KEY,
  name        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

-- An API key is stored only as the SHA-256 of its value; the value is shown once at creation.
-- Keys are soft-deleted so that `apikey:<keyId>` attributions keep resolving.
CREATE TABLE api_keys (
  id                     text PRIMARY KEY,
  tenant_id              uuid NOT NULL REFERENCES tenants (id),
  name                   text NOT NULL,
  key_hash               bytea NOT NULL,
  key_hint               text NOT NULL,
  scopes                 text[] NOT NULL,
  rate_limit_per_second  integer,
  rate_limit_burst       integer,
  created_at             timestamptz NOT NULL DEFAULT now(),
  last_used_at           timestamptz,
  expires_at             timestamptz,
  deleted_at             timestamptz,
  CHECK ((rate_limit_per_second IS NULL) = (rate_limit_burst IS NULL))
);
CREATE UNIQUE INDEX api_keys_hash ON api_keys (key_hash);
CREATE INDEX api_keys_tenant ON api_keys (tenant_id, created_at);

-- Durable jobs. `run_at` is when the job may next be claimed; a claim pushes it forward by the
-- lease, so a job whose worker died becomes claimable again once the lease runs out. The
-- attempt counter doubles as a fencing token: only the holder of the current attempt may
-- complete or fail the job.
CREATE TABLE jobs (
  id            bigserial PRIMARY KEY,
  kind          text NOT NULL,
  payload       jsonb NOT NULL DEFAULT '{}'::jsonb,
  job_key       text,
  run_at        timestamptz NOT NULL DEFAULT now(),
  attempts      integer NOT NULL DEFAULT 0,
  max_attempts  integer NOT NULL DEFAULT 25,
  locked_by     text,
  locked_at     timestamptz,
  last_error    text,
  failed_at     timestamptz,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX jobs_key ON jobs (job_key);
CREATE INDEX jobs_ready ON jobs (run_at, id) WHERE failed_at IS NULL;

CREATE TABLE cases (
  id                    uuid PRIMARY KEY,
  tenant_id             uuid NOT NULL REFERENCES tenants (id),
  request_id            text NOT NULL,
  status                text NOT NULL,
  type                  text NOT NULL,
  workflow_id           text NOT NULL,
  workflow_version      integer NOT NULL,
  -- json, not jsonb: what the partner sent comes back with its keys in the order it sent them.
  subject               json NOT NULL,
  payload               json NOT NULL,
  metadata              json NOT NULL DEFAULT '{}'::json,
  external_customer_id  text,
  event_timestamp       timestamptz,
  idempotency_key       text,
  dry_run               boolean NOT NULL DEFAULT false,
  decision              jsonb,
  decision_history      jsonb NOT NULL DEFAULT '[]'::jsonb,
  workflow_result       json,
  error                 jsonb,
  created_at            timestamptz NOT NULL DEFAULT now(),
  updated_at            timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX cases_idempotency ON cases (tenant_id, idempotency_key);
CREATE INDEX cases_tenant_created ON cases (tenant_id, created_at DESC, id DESC);

CREATE TABLE tag_options (
  tenant_id   uuid NOT NULL REFERENCES tenants (id),
  tag         text NOT NULL,
  enabled     boolean NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, tag)
);

CREATE TABLE case_tags (
  id          bigserial PRIMARY KEY,
  tenant_id   uuid NOT NULL,
  case_id     uuid NOT NULL REFERENCES cases (id),
  tag         text NOT NULL,
  created_by  text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX case_tags_unique ON case_tags (case_id, tag);

CREATE TABLE webhook_configs (
  tenant_id         uuid NOT NULL REFERENCES tenants (id),
  webhook_key       text NOT NULL,
  url               text NOT NULL,
  secrets           jsonb NOT NULL,
  active_secret_id  text,
  max_attempts      integer NOT NULL DEFAULT 5,
  timeout_ms        integer NOT NULL DEFAULT 10000,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, webhook_key)
);

-- The outbox: every event is written in the transaction of the change that caused it.
CREATE TABLE events (
  id           uuid PRIMARY KEY,
  tenant_id    uuid NOT NULL REFERENCES tenants (id),
  case_id      uuid,
  event_type   text NOT NULL,
  webhook_key  text,
  payload      jsonb NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_tenant_created ON events (tenant_id, created_at);
CREATE INDEX events_case ON events (case_id);

-- Process-wide secrets shared by every API and worker process (the upload URL signing key).
CREATE TABLE service_secrets (
  name        text PRIMARY KEY,
  value       text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
