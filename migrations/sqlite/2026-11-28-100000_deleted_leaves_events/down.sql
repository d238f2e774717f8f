-- Scrubbed payloads stay scrubbed: what was deleted is gone.
DROP INDEX events_content_idx;
ALTER TABLE events DROP COLUMN message_id;
ALTER TABLE events DROP COLUMN conversation_id;
ALTER TABLE events DROP COLUMN subject_id;
