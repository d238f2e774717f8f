-- An erase's last pass (docs/api.md, "Jobs"): what others' kept events and
-- stored answers showed of the erased contact is redacted in bounded
-- batches by creation time, each its own short transaction, from the
-- contact's creation on; these say how far each pass has gone
-- (microseconds; NULL: not begun). The erase's final transaction then
-- reads only what was written since, so that its cost follows the
-- contact's own rows and never the size of the event log.
ALTER TABLE jobs ADD COLUMN events_done_to BIGINT;
ALTER TABLE jobs ADD COLUMN answers_done_to BIGINT;

-- Finished jobs are kept 7 days, then pruned with the events.
CREATE INDEX jobs_finished_idx ON jobs (finished_at) WHERE finished_at IS NOT NULL;

-- A conversation whose deletion runs as a job: gone for its members at
-- once (every membership check and list leaves it out), its messages
-- deleted in batches, then the row.
ALTER TABLE conversations ADD COLUMN deleting BOOLEAN NOT NULL DEFAULT FALSE;
