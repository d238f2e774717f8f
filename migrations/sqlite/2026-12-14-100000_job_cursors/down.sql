ALTER TABLE conversations DROP COLUMN deleting;
DROP INDEX jobs_finished_idx;
ALTER TABLE jobs DROP COLUMN answers_done_to;
ALTER TABLE jobs DROP COLUMN events_done_to;
