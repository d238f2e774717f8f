-- Scrubbed payloads stay scrubbed: what was deleted is gone.
DROP INDEX events_content_idx;
ALTER TABLE events
    DROP COLUMN message_id,
    DROP COLUMN conversation_id,
    DROP COLUMN subject_id;
