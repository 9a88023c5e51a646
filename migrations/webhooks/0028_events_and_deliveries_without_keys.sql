-- The per-case tables keep no foreign keys (decision 0032; migrations 0026 to 0028): an event is
-- written for the tenant of the case or request it is about, a delivery in the statement that
-- inserts its event (or as a redelivery of an existing delivery), and tenants and events are
-- never deleted.
ALTER TABLE events DROP CONSTRAINT events_tenant_id_fkey;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_tenant_id_fkey;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_event_id_fkey;
