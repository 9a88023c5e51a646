-- The workflow engine: the state a case carries between steps, every node execution as a step,
-- the nodes a case is paused on, and customer attributes read by workflows.

ALTER TABLE cases
  ADD COLUMN current_node_id text,
  ADD COLUMN step_seq integer NOT NULL DEFAULT 0,
  ADD COLUMN node_outputs jsonb NOT NULL DEFAULT '{}'::jsonb,
  ADD COLUMN closed_at timestamptz,
  ADD COLUMN closed_by text;

CREATE INDEX cases_tenant_status ON cases (tenant_id, status, created_at DESC, id DESC);
CREATE INDEX cases_tenant_customer ON cases (tenant_id, external_customer_id, created_at DESC, id DESC)
  WHERE external_customer_id IS NOT NULL;

-- One row per node execution, written in the transaction that ran it.
CREATE TABLE case_steps (
  tenant_id    uuid NOT NULL,
  case_id      uuid NOT NULL REFERENCES cases (id),
  seq          integer NOT NULL,
  node_id      text NOT NULL,
  node_type    text NOT NULL,
  status       text NOT NULL,
  output       jsonb,
  next_node_id text,
  error        jsonb,
  created_at   timestamptz NOT NULL DEFAULT now(),
  finished_at  timestamptz,
  PRIMARY KEY (case_id, seq)
);

-- A node paused on something outside the workflow: an external callback, an information
-- request, a provider. `resolved_at` is set exactly once, by whichever resolution wins.
CREATE TABLE case_waits (
  id            uuid PRIMARY KEY,
  tenant_id     uuid NOT NULL,
  case_id       uuid NOT NULL REFERENCES cases (id),
  seq           integer NOT NULL,
  node_id       text NOT NULL,
  kind          text NOT NULL,
  callback_ref  text,
  rfi_id        uuid,
  provider_id   text,
  expires_at    timestamptz,
  resolved_at   timestamptz,
  resolution    text,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX case_waits_callback_ref ON case_waits (callback_ref) WHERE callback_ref IS NOT NULL;
CREATE INDEX case_waits_case ON case_waits (case_id) WHERE resolved_at IS NULL;
CREATE INDEX case_waits_rfi ON case_waits (rfi_id) WHERE rfi_id IS NOT NULL;

CREATE TABLE customer_attributes (
  tenant_id             uuid NOT NULL REFERENCES tenants (id),
  external_customer_id  text NOT NULL,
  attributes            jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at            timestamptz NOT NULL DEFAULT now(),
  updated_at            timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, external_customer_id)
);
