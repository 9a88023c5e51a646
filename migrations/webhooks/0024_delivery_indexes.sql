-- Fewer index entries for each delivery's two writes (issue 20). The success of an attempt
-- updates its delivery row; the update cannot be HOT (status and next_attempt_at are indexed),
-- so it adds an entry to every index whose predicate the new row meets.
-- * webhook_deliveries_seq: seq is unique by construction (a sequence), and every read of the log
--   is a tenant's, served by webhook_deliveries_tenant (tenant_id, seq DESC).
-- * The index by status holds only deliveries not succeeded: those are the ones read by status
--   (pending, failed, and a redelivery of failed ones); a succeeded delivery, nearly all of them,
--   is read from the tenant's log instead, where it is most of the rows.
DROP INDEX webhook_deliveries_seq;
DROP INDEX webhook_deliveries_tenant_status;
CREATE INDEX webhook_deliveries_tenant_unsettled ON webhook_deliveries (tenant_id, status, seq DESC)
  WHERE status <> 'succeeded';
