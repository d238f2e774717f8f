CREATE INDEX events_created_at_idx ON events (created_at);
DELETE FROM event_recipients r WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.id = r.event_id);
CREATE INDEX event_recipients_event_id_idx ON event_recipients (event_id);
ALTER TABLE event_recipients ADD CONSTRAINT event_recipients_event_id_fkey
    FOREIGN KEY (event_id) REFERENCES events (id) ON DELETE CASCADE;
