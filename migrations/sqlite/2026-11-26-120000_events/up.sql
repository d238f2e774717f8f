-- Events (API.md section 11), the outbox: each write inserts its events and
-- their recipients in its own transaction, so a committed change always has
-- its events and a rolled-back one never has.
CREATE TABLE events (
    -- Commit order. SQLite runs one write transaction at a time, so the
    -- order of insertion is the order of commit; AUTOINCREMENT never reuses
    -- a position, even after pruning.
    position   INTEGER PRIMARY KEY AUTOINCREMENT,
    id         TEXT NOT NULL,
    type       TEXT NOT NULL,
    -- Who made the change.
    actor_id   TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    -- The object as the actor sees it (`{"id": ...}` for a deletion): what
    -- webhooks send, and what a recipient without its own payload sees.
    payload    TEXT NOT NULL,
    CONSTRAINT events_id_key UNIQUE (id)
);
-- Retention: pruning events older than 7 days.
CREATE INDEX events_created_at_idx ON events (created_at);

CREATE TABLE event_recipients (
    contact_id TEXT NOT NULL,
    -- The event's position, repeated for the per-recipient range scan.
    position   BIGINT NOT NULL,
    event_id   TEXT NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    -- The object as this recipient sees it, when that differs from the
    -- actor's view (a conversation's per-member state); NULL otherwise.
    payload    TEXT,
    PRIMARY KEY (contact_id, position)
);
CREATE INDEX event_recipients_event_id_idx ON event_recipients (event_id);
CREATE INDEX event_recipients_position_idx ON event_recipients (position);
