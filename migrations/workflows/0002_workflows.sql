-- Workflow definitions: a tenant's workflows, each with immutable numbered versions and the
-- version new cases use by default (`current_version`, the latest one published).

-- `latest_version` is the counter that numbers versions: taking a number updates this row, so
-- concurrent creations queue on its lock and a rolled-back creation gives its number back.
CREATE TABLE workflows (
  tenant_id        uuid NOT NULL REFERENCES tenants (id),
  workflow_id      text NOT NULL CHECK (workflow_id ~ '^[A-Za-z0-9_.-]{1,64}$'),
  latest_version   integer NOT NULL DEFAULT 0,
  current_version  integer,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, workflow_id)
);

CREATE TABLE workflow_versions (
  tenant_id     uuid NOT NULL,
  workflow_id   text NOT NULL,
  version       integer NOT NULL CHECK (version >= 1),
  -- json, not jsonb: the definition is shown back exactly as written, keys in their order.
  definition    json NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  -- Set once, by the first publication; a published version stays pinnable for good.
  published_at  timestamptz,
  PRIMARY KEY (tenant_id, workflow_id, version),
  FOREIGN KEY (tenant_id, workflow_id) REFERENCES workflows (tenant_id, workflow_id)
);

ALTER TABLE workflows
  ADD FOREIGN KEY (tenant_id, workflow_id, current_version)
  REFERENCES workflow_versions (tenant_id, workflow_id, version);

-- Every process caches compiled versions without asking whether they changed: the database
-- guarantees that they never do.
CREATE FUNCTION workflow_versions_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.tenant_id <> OLD.tenant_id
     OR NEW.workflow_id <> OLD.workflow_id
     OR NEW.version <> OLD.version
     OR NEW.definition::text IS DISTINCT FROM OLD.definition::text
     OR NEW.created_at IS DISTINCT FROM OLD.created_at
     OR (OLD.published_at IS NOT NULL AND NEW.published_at IS DISTINCT FROM OLD.published_at) THEN
    RAISE EXCEPTION 'version % of workflow % is immutable', OLD.version, OLD.workflow_id
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END
$$;

CREATE TRIGGER workflow_versions_immutable
  BEFORE UPDATE ON workflow_versions
  FOR EACH ROW EXECUTE FUNCTION workflow_versions_immutable();
