-- Screening verdicts take the contract's values (section 6): `match` or `no_match`. The verdicts
-- recorded as `not_a_match` before are the same verdict under its former name.
ALTER TABLE screening_reviews DROP CONSTRAINT screening_reviews_verdict_check;
UPDATE screening_reviews SET verdict = 'no_match' WHERE verdict = 'not_a_match';
ALTER TABLE screening_reviews
  ADD CONSTRAINT screening_reviews_verdict_check CHECK (verdict IN ('match', 'no_match'));
