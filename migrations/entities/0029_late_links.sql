-- The links whose case time lies more than a minute before their acceptance (a case submitted
-- with an `eventTimestamp` well in the past), by entity and acceptance time. A long history's
-- kept window reads the links accepted since its last read as two ranges: the key's links of
-- recent case times in case_entities_entity_time, and these (decision 0021, "Exact, and no longer
-- one index range a figure"). Most links are not late, and never enter this index.
CREATE INDEX case_entities_late ON case_entities (entity_id, accepted_at)
  WHERE accepted_at - case_time > interval '1 minute';

-- What share of the links is late, so that a plan made once for any key (a prepared statement's
-- generic plan) knows this index holds few of them and reads it, not the key's whole range.
CREATE STATISTICS case_entities_lateness ON (accepted_at - case_time) FROM case_entities;
