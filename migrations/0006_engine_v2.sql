-- Engine v2: waits of any node type's own kind, found again by one reference; the facts that
-- explain each step (which rule held, the score's contributions); no delivery row for an event
-- that has nowhere to go.

-- A wait is found again by what its node type chose: a callback reference, an information
-- request id, a vendor's applicant id. Several open waits may share one (a vendor's applicant).
ALTER TABLE case_waits ADD COLUMN ref text, ADD COLUMN data jsonb;
UPDATE case_waits SET ref = coalesce(callback_ref, rfi_id::text);
DROP INDEX case_waits_callback_ref;
DROP INDEX case_waits_rfi;
ALTER TABLE case_waits DROP COLUMN callback_ref, DROP COLUMN rfi_id;
CREATE INDEX case_waits_ref ON case_waits (tenant_id, kind, ref) WHERE ref IS NOT NULL;

-- Why the step went where it went, by node type (contract section 4, "Trace").
ALTER TABLE case_steps ADD COLUMN explain jsonb;
