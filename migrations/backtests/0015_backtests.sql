-- Backtests (contract section 8): a candidate workflow version run over past cases. A backtest
-- reads the cases' records and writes only these two tables.

-- One row per backtest. `summary` is kept with each batch of results, in the transaction that
-- marks the batch's cases done, so that a batch run again after a crash counts nothing twice.
CREATE TABLE backtests (
  id            uuid PRIMARY KEY,
  tenant_id     uuid NOT NULL,
  workflow_id   text NOT NULL,
  version       integer NOT NULL,
  window_from   timestamptz NOT NULL,
  window_to     timestamptz NOT NULL,
  case_type     text,
  sample        integer,
  status        text NOT NULL CHECK (status IN ('running', 'completed', 'cancelled', 'failed')),
  -- Null until the cases are chosen (the first thing the backtest's job does).
  total         integer,
  done          integer NOT NULL DEFAULT 0,
  summary       jsonb NOT NULL,
  error         text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  finished_at   timestamptz
);
CREATE INDEX backtests_tenant ON backtests (tenant_id, created_at DESC, id DESC);
CREATE INDEX backtests_running ON backtests (tenant_id) WHERE status = 'running';

-- The cases a backtest replays, in the order it replays them, each with its result once done
-- (`after` null until then).
CREATE TABLE backtest_cases (
  backtest_id  uuid NOT NULL,
  ordinal      integer NOT NULL,
  tenant_id    uuid NOT NULL,
  case_id      uuid NOT NULL,
  changed      boolean,
  before       jsonb,
  after        jsonb,
  PRIMARY KEY (backtest_id, ordinal)
);
