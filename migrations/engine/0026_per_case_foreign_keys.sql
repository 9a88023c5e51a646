-- The per-case tables' foreign keys, checked by a trigger query for every row written (decision
-- 0032): seven a decided case.
-- What they guarded cannot happen: tenants, cases and events are never deleted, and each of
-- these rows is written in the statement or transaction that has its parent in hand (a step with
-- its case locked, a delivery in the statement that inserts its event, a case for the tenant its
-- request was let in for).
ALTER TABLE cases DROP CONSTRAINT cases_tenant_id_fkey;
ALTER TABLE case_steps DROP CONSTRAINT case_steps_case_id_fkey;
ALTER TABLE events DROP CONSTRAINT events_tenant_id_fkey;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_tenant_id_fkey;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_event_id_fkey;
