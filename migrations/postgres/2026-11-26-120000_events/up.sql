-- Events (API.md section 11), the outbox: each write inserts its events and
-- their recipients in its own transaction, so a committed change always has
-- its events and a rolled-back one never has.
CREATE TABLE events (
    id         UUID PRIMARY KEY,
    -- Commit order: pg_current_xact_id() * 2^20 + the event's index within
    -- its transaction. Readers read only below the oldest running
    -- transaction's position (pg_snapshot_xmin(pg_current_snapshot()) *
    -- 2^20), so no event can later appear behind one already read.
    position   BIGINT NOT NULL,
    type       TEXT NOT NULL,
    -- Who made the change (no foreign key: an event is history).
    actor_id   UUID NOT NULL,
    created_at BIGINT NOT NULL,
    -- The object as the actor sees it (`{"id": ...}` for a deletion): what
    -- webhooks send, and what a recipient without its own payload sees.
    payload    TEXT NOT NULL,
    CONSTRAINT events_position_key UNIQUE (position)
);
-- Retention: pruning events older than 7 days.
CREATE INDEX events_created_at_idx ON events (created_at);

CREATE TABLE event_recipients (
    contact_id UUID NOT NULL,
    -- The event's position, repeated for the per-recipient range scan.
    position   BIGINT NOT NULL,
    event_id   UUID NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    -- The object as this recipient sees it, when that differs from the
    -- actor's view (a conversation's per-member state); NULL otherwise.
    payload    TEXT,
    PRIMARY KEY (contact_id, position)
);
CREATE INDEX event_recipients_event_id_idx ON event_recipients (event_id);
CREATE INDEX event_recipients_position_idx ON event_recipients (position);

-- Wakes every `confab serve` process listening on `confab_events` when a
-- transaction that wrote events commits (NOTIFY is delivered at commit and
-- folded per transaction). The table stays the truth: a lost notification
-- delays an event until the next poll, never loses it.
CREATE FUNCTION confab_events_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('confab_events', '');
    RETURN NULL;
END
$$;
CREATE TRIGGER events_notify AFTER INSERT ON events
    FOR EACH STATEMENT EXECUTE FUNCTION confab_events_notify();
