-- Analysts at work on a tenant's cases (decision 0026): who owns a case, its internal comments,
-- the review deadline of each case type, the filters analysts save for each other, and the
-- indexes the console's "All cases" view and its search need at a million cases per tenant.

-- The analyst who owns a case. A deleted user's cases go back to nobody (and to the queue).
ALTER TABLE cases
  ADD COLUMN assignee_id uuid,
  ADD COLUMN assigned_at timestamptz,
  ADD CONSTRAINT cases_assignee FOREIGN KEY (tenant_id, assignee_id)
    REFERENCES console_users (tenant_id, id) ON DELETE SET NULL (assignee_id);

-- "Mine" and the assignee filter: an analyst's cases, newest first.
CREATE INDEX cases_tenant_assignee ON cases (tenant_id, assignee_id, created_at DESC, id DESC)
  WHERE assignee_id IS NOT NULL;

-- Search by display name, by words and word prefixes ("grace hop"): the 'simple' configuration
-- keeps every word as written (lower-cased), with no language's stemming or stop words.
CREATE INDEX cases_display_name_words ON cases
  USING gin (to_tsvector('simple', coalesce(subject ->> 'displayName', '')));

-- The amount range of "All cases": a transaction's amount, when it is a number.
CREATE INDEX cases_tenant_amount ON cases (tenant_id, (CASE WHEN json_typeof(subject -> 'transaction' -> 'amount') = 'number'
  THEN (subject -> 'transaction' ->> 'amount')::numeric END)) WHERE type = 'Transaction';

-- Internal notes between analysts: never part of the case record the partner reads.
CREATE TABLE case_comments (
  id          uuid PRIMARY KEY,
  tenant_id   uuid NOT NULL,
  case_id     uuid NOT NULL REFERENCES cases (id),
  author      text NOT NULL,
  body        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX case_comments_case ON case_comments (case_id, created_at, id);

-- How long a case of each type may wait for review: its due date is its creation plus this.
CREATE TABLE review_slas (
  tenant_id   uuid NOT NULL REFERENCES tenants (id),
  case_type   text NOT NULL,
  hours       integer NOT NULL CHECK (hours BETWEEN 1 AND 8760),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, case_type)
);

-- Filters of the "All cases" view saved under a name, shared by the tenant's users.
CREATE TABLE case_filters (
  id          uuid PRIMARY KEY,
  tenant_id   uuid NOT NULL REFERENCES tenants (id),
  name        text NOT NULL,
  query       text NOT NULL,
  created_by  text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, name)
);
