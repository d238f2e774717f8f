CREATE INDEX events_created_at_idx ON events (created_at);
