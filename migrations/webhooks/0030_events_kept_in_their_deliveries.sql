-- An event is written once (decision 0034). Every event that is delivered, or recorded as failed
-- for want of a webhook configuration, has a first delivery row holding its type, case, tenant and
-- its body (the payload with its webhookId): the events row beside it repeated all of it, with
-- three index entries, for every case, and no statement read it. The table keeps the events that
-- have no delivery (a dry run's) and every event written before this migration; `events` is now a
-- view of all of them, for the operator and the tests that read it.
ALTER TABLE events RENAME TO recorded_events;
ALTER INDEX events_pkey RENAME TO recorded_events_pkey;
ALTER INDEX events_tenant_created RENAME TO recorded_events_tenant_created;
ALTER INDEX events_case RENAME TO recorded_events_case;

CREATE VIEW events AS
  SELECT id, tenant_id, case_id, event_type, webhook_key, payload, created_at
  FROM recorded_events
  UNION ALL
  SELECT d.event_id, d.tenant_id, d.case_id, d.event_type, NULLIF(d.webhook_key, 'default'),
         d.body::jsonb - 'webhookId', d.created_at
  FROM webhook_deliveries d
  WHERE d.redelivery_of IS NULL
    AND NOT EXISTS (SELECT 1 FROM recorded_events r WHERE r.id = d.event_id);

-- A process of the previous build, still running while this one starts, inserts into `events`:
-- its rows go to the table, where the view shows them once (the delivery it writes beside one is
-- left out of the view by the NOT EXISTS above).
CREATE FUNCTION events_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO recorded_events (id, tenant_id, case_id, event_type, webhook_key, payload, created_at)
  VALUES (NEW.id, NEW.tenant_id, NEW.case_id, NEW.event_type, NEW.webhook_key, NEW.payload,
          coalesce(NEW.created_at, now()));
  RETURN NEW;
END
$$;
CREATE TRIGGER events_insert INSTEAD OF INSERT ON events FOR EACH ROW EXECUTE FUNCTION events_insert();
