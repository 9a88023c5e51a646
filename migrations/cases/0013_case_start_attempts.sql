-- A new case's runs are counted before they begin (decision 0011): the starter's claim is a
-- statement of its own that commits the count and a short lease, and the run then takes the case
-- in a transaction of its own. A case whose run ends its process every time (an out-of-memory
-- payload, a native crash) is failed after CDS_CASE_CRASH_LIMIT such runs instead of being
-- retried without end by every worker in turn. Neither column is indexed, so that the claim's
-- update of a case stays a heap-only one.
ALTER TABLE cases
  ADD COLUMN start_attempts smallint NOT NULL DEFAULT 0,
  ADD COLUMN start_claimed_until timestamptz;

