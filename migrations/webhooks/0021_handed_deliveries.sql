-- A delivery handed at its insert to the inserting process's delivery worker (decision 0007): its
-- first attempt is counted by this lease, written with the row, instead of by a claim row. While
-- claims = 0 and the lease is alive, the delivery is that worker's; once the lease has run out
-- with claims still 0, its process died and the first attempt counts as interrupted.
ALTER TABLE webhook_deliveries ADD COLUMN handed_until timestamptz;
