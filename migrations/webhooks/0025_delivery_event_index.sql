-- One index entry fewer for each delivery's two writes (issue 20): no statement reads deliveries
-- by their event (the log is read by tenant, case and status), and events are never deleted, so
-- the foreign key to them needs no index on this side either. The insert of every delivery, and
-- the update of every attempted one (not HOT: its status is indexed), each wrote one here.
DROP INDEX webhook_deliveries_event;
