-- The links' index is by week first (decision 0021, "Links by week"). By entity first, a new
-- case's links fell at random on the leaf pages of the whole history's index: each page written
-- after a checkpoint went into the WAL whole, and at a million past cases that was a third of the
-- WAL a case wrote. By week first, new links go into the current week's part of the index, a few
-- thousand pages at most, while the older weeks' pages are left alone. A read by entity names the
-- weeks it reads (src/modules/entities/weeks.ts), one descent of the index each.
--
-- Building the index holds back new cases while it runs (3 s for two million links on the
-- benchmark's machine, its pages cached). On a long history an operator may build it beforehand
-- without that, with the same statement as `CREATE INDEX CONCURRENTLY` (docs/operators.md); this
-- one then finds it built.
CREATE INDEX IF NOT EXISTS case_entities_week ON case_entities
  (date_bin('7 days'::interval, case_time, '2000-01-03 00:00:00+00'::timestamptz), entity_id,
   case_time DESC, case_id DESC)
  INCLUDE (case_type, currency, amount, accepted_at, peers);
DROP INDEX IF EXISTS case_entities_entity_time;
