-- Information requests (RFI), their upload slots and the per-case slot budget.

-- `recipient`, `cc`, `subject`, `body` and the answer fields are customer personal data: they are
-- read back through the API and never logged.
CREATE TABLE information_requests (
  id               uuid PRIMARY KEY,
  tenant_id        uuid NOT NULL REFERENCES tenants (id),
  case_id          uuid NOT NULL REFERENCES cases (id),
  status           text NOT NULL CHECK (status IN ('pending', 'answered', 'expired', 'cancelled')),
  source           text NOT NULL CHECK (source IN ('api', 'analyst', 'workflow')),
  requested_by     text NOT NULL,
  node_id          text,
  recipient        text NOT NULL,
  cc               text[],
  subject          text NOT NULL,
  body             text NOT NULL,
  template_id      text,
  webhook_key      text,
  awaits_response  boolean NOT NULL DEFAULT false,
  expires_at       timestamptz,
  -- Every minted slot counts for good, even if never uploaded: the budget is this counter, not
  -- a count of rows that could ever be deleted.
  slots_minted     integer NOT NULL DEFAULT 0 CHECK (slots_minted BETWEEN 0 AND 30),
  reminder_count   integer NOT NULL DEFAULT 0,
  last_reminded_at timestamptz,
  answered_at      timestamptz,
  answered_by      text,
  answer_source    text CHECK (answer_source IN ('rfi_response', 'analyst')),
  answer_fields    jsonb,
  cancelled_at     timestamptz,
  cancelled_by     text,
  expired_at       timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  CHECK ((status = 'answered') = (answered_at IS NOT NULL))
);
CREATE INDEX information_requests_case ON information_requests (tenant_id, case_id, created_at, id);

-- The slots a partner minted for a request (endpoint 12). The object itself lives in the blob
-- store under `object_key`; a slot is attached once, to an answer of its own request.
CREATE TABLE rfi_upload_slots (
  id            uuid PRIMARY KEY,
  tenant_id     uuid NOT NULL REFERENCES tenants (id),
  case_id       uuid NOT NULL REFERENCES cases (id),
  rfi_id        uuid NOT NULL REFERENCES information_requests (id),
  object_key    text NOT NULL UNIQUE,
  filename      text NOT NULL,
  content_type  text NOT NULL,
  size_bytes    integer NOT NULL CHECK (size_bytes BETWEEN 1 AND 20971520),
  expires_at    timestamptz NOT NULL,
  attached_at   timestamptz,
  position      integer,
  label         text,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX rfi_upload_slots_rfi ON rfi_upload_slots (rfi_id, position);
CREATE INDEX rfi_upload_slots_case ON rfi_upload_slots (case_id);

-- Slots minted per case, counted permanently (at most 100). One row per case, locked by each
-- mint, so that concurrent mints on different requests of one case count exactly.
CREATE TABLE rfi_case_upload_budgets (
  case_id       uuid PRIMARY KEY REFERENCES cases (id),
  tenant_id     uuid NOT NULL REFERENCES tenants (id),
  slots_minted  integer NOT NULL CHECK (slots_minted BETWEEN 0 AND 100)
);
