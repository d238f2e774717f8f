-- Webhooks (API.md section 11): each event is POSTed to each webhook whose
-- filter takes it. First attempts go out in event order, driven by a cursor
-- over the events table; failed attempts become retry rows, so that they
-- never hold back the events after them.
CREATE TABLE webhooks (
    id                TEXT PRIMARY KEY,
    url               TEXT NOT NULL,
    -- Event type names, comma-separated; empty: every type.
    event_types       TEXT NOT NULL,
    -- The HMAC key (never shown again after creation).
    secret            TEXT NOT NULL,
    created_at        BIGINT NOT NULL,
    -- The position of the last event whose first attempt was made (or that
    -- the filter skipped). A new webhook starts at the end of the events
    -- readable then: it gets the events committed after its creation.
    cursor_position   BIGINT NOT NULL,
    -- Who makes the first attempts now, and until when (Unix microseconds):
    -- a process that dies leaves a lease that runs out, and another process
    -- then makes the attempt in flight again (at least once).
    leased_by         TEXT,
    leased_until      BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE webhook_retries (
    webhook_id       TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    -- A pruned event takes its retries with it.
    event_id         TEXT NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    -- How many attempts were started (the next one is attempt + 1).
    attempt          INTEGER NOT NULL,
    -- When the next attempt is due; while one is in flight, when its lease
    -- runs out (then it is due again).
    next_at          BIGINT NOT NULL,
    -- When the first attempt was made: retries stop 24 h after it.
    first_attempt_at BIGINT NOT NULL,
    -- Who makes the attempt in flight (NULL: none).
    leased_by        TEXT,
    PRIMARY KEY (webhook_id, event_id)
);
CREATE INDEX webhook_retries_next_at_idx ON webhook_retries (next_at);
CREATE INDEX webhook_retries_event_id_idx ON webhook_retries (event_id);
