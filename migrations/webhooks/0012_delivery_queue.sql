-- A pending delivery is its own queue entry (decision 0007): due at next_attempt_at, claimed in
-- batches by a claim row of webhook_claims instead of a job of its own. A successful attempt is
-- logged on the delivery row; failed and interrupted attempts keep their rows in webhook_attempts.

-- Claims of the delivery whose outcome is recorded (an attempt, a deferral, a give-up): a claim
-- entry of a higher number is still open, or was cut short by a crash.
ALTER TABLE webhook_deliveries ADD COLUMN claims integer NOT NULL DEFAULT 0;
-- The successful attempt's log: where it went, the secret it was signed with, how long the
-- receiver took and an excerpt of its answer (its number, start and status are attempt_count,
-- last_attempt_at and last_status_code).
ALTER TABLE webhook_deliveries ADD COLUMN last_target text;
ALTER TABLE webhook_deliveries ADD COLUMN last_secret_id text;
ALTER TABLE webhook_deliveries ADD COLUMN last_latency_ms integer;
ALTER TABLE webhook_deliveries ADD COLUMN last_response_body text;
ALTER TABLE webhook_deliveries ALTER COLUMN next_attempt_at SET DEFAULT now();

-- Pending deliveries queued as jobs before this migration: due now (a retry at its job's time).
UPDATE webhook_deliveries d
SET next_attempt_at = coalesce(
  (SELECT j.run_at FROM jobs j WHERE j.kind = 'webhooks.deliver' AND j.payload ->> 'deliveryId' = d.id::text),
  d.next_attempt_at, now())
WHERE d.status = 'pending';
DELETE FROM jobs WHERE kind = 'webhooks.deliver';

CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';

-- One row per batch of deliveries a worker claimed: entry i is the claim numbered turns[i] of
-- deliveries[i]. It exists from before the attempts are sent until their outcomes are recorded;
-- a worker renews the lease of its claims while it works, so a claim whose lease ran out belongs
-- to a process that died, and its open entries count as interrupted attempts.
CREATE TABLE webhook_claims (
  id           uuid PRIMARY KEY,
  lease_until  timestamptz NOT NULL,
  deliveries   uuid[] NOT NULL,
  turns        integer[] NOT NULL
);
