-- The cases carrying a tag, by tenant and tag (the review queue's and "All cases"' tag filter,
-- `casesTagged`): without it, a rare tag was found by reading every tag of every case.
CREATE INDEX case_tags_tenant_tag ON case_tags (tenant_id, tag, case_id);
