-- New cases go to pages with room for them, not into what is left of old ones (decision 0036).
-- A page of decided cases keeps a few hundred bytes free, less than a decided case needs but
-- more than a new, received one: with the default fillfactor every such page of the table's
-- history took one new case, so each case written dirtied a page of its own, and after a
-- checkpoint wrote it whole to the WAL (8 KB a case on a history of a million cases). With 90,
-- an insert, or an update that must move its row, takes a page only when a tenth of the page
-- stays free beside it; an update that stays on its page may still use that tenth, which is
-- what the reserve is for: a received case's decision. Existing pages are not rewritten.
ALTER TABLE cases SET (fillfactor = 90);
