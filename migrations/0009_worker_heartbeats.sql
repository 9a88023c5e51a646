-- Workers announce themselves here, so that `/ready` on any API process can tell whether a worker
-- is running somewhere: a deployment whose workers are all gone accepts cases nobody runs.
CREATE TABLE worker_heartbeats (
  worker_id   text PRIMARY KEY,
  host        text NOT NULL,
  pid         integer NOT NULL,
  started_at  timestamptz NOT NULL DEFAULT now(),
  seen_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX worker_heartbeats_seen ON worker_heartbeats (seen_at);
