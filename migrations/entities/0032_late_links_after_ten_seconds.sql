-- A link is late when its case time lies more than ten seconds (it was a minute) before its
-- acceptance. A long history's kept window reads the links accepted since its last read as the
-- key's links of case times from ten seconds before that read's horizon, and the late ones by
-- acceptance from this index: with a minute, a hot key's read went through a minute of its links,
-- each a visit of a heap page not yet all-visible (decision 0021, "Late after ten seconds").
DROP INDEX case_entities_late;
CREATE INDEX case_entities_late ON case_entities (entity_id, accepted_at)
  WHERE accepted_at - case_time > interval '10 seconds';
