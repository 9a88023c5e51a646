-- The per-case tables keep no foreign keys (decision 0032; migrations 0026 to 0028): a step is
-- written in the engine's transaction, which has locked its case, and cases are never deleted.
ALTER TABLE case_steps DROP CONSTRAINT case_steps_case_id_fkey;
