-- A backtest reads the waits of a batch of past cases, resolved ones included (the callback
-- bodies and answers it replays from); the partial index on open waits does not serve that.
CREATE INDEX case_waits_by_case ON case_waits (case_id);
