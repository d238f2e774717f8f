-- Idempotency-Key (API.md section 9): one row per caller and key. A request
-- claims its key first (`claim`, held until `locked_until`); the write it
-- protects stores its response here in the same transaction, so a committed
-- write always has its stored response and a rolled-back one never does.
CREATE TABLE idempotency_keys (
    contact_id   TEXT NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    key          TEXT NOT NULL,
    -- Lowercase hex SHA-256 of the request (method, path, body type, body):
    -- the same key with another request is refused.
    fingerprint  TEXT NOT NULL,
    -- Who holds the key now; a request completes the key only while it
    -- still holds it.
    claim        TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    locked_until BIGINT NOT NULL,
    -- The stored response; NULL while the request is in flight.
    status       INTEGER,
    location     TEXT,
    body         TEXT,
    PRIMARY KEY (contact_id, key)
);
-- Pruning keys older than 24 h.
CREATE INDEX idempotency_keys_created_at_idx ON idempotency_keys (created_at);
