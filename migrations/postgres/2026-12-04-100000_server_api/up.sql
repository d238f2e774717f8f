-- Server keys (API.md section 14): an app's backend authenticates with one
-- on /v1/admin, and acts for a contact with `Confab-Contact`. Like tokens,
-- only the SHA-256 of the secret is stored.
CREATE TABLE server_keys (
    id            UUID PRIMARY KEY,
    name          TEXT NOT NULL,
    -- Lowercase hex SHA-256 of the secret; the secret itself is never stored.
    key_hash      TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    -- The latest request made with the key, written at most once a minute.
    last_used_at  BIGINT,
    revoked_at    BIGINT,
    CONSTRAINT server_keys_key_hash_key UNIQUE (key_hash)
);

-- A token's latest request, written at most once a minute (the list of a
-- contact's tokens shows it, so that a backend can tell a device in use).
ALTER TABLE tokens ADD COLUMN last_used_at BIGINT;

-- Lists of the server API (newest first, keyset-paged): every contact, and a
-- contact's tokens. The tokens' index replaces the one on contact_id alone.
CREATE INDEX contacts_created_idx ON contacts (created_at, id);
CREATE INDEX tokens_contact_created_idx ON tokens (contact_id, created_at, id);
DROP INDEX tokens_contact_id_idx;

-- Each attempt to deliver an event to a webhook, for the operator
-- (GET /v1/admin/webhooks/:id/deliveries): the answer's status, or why
-- there was none. Kept as long as events are (the retention task prunes
-- both); an event pruned first leaves its attempts readable.
CREATE TABLE webhook_deliveries (
    id            UUID PRIMARY KEY,
    webhook_id    UUID NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id      UUID NOT NULL,
    attempt       INTEGER NOT NULL,
    status        INTEGER,
    error         TEXT,
    attempted_at  BIGINT NOT NULL
);
CREATE INDEX webhook_deliveries_list_idx ON webhook_deliveries (webhook_id, attempted_at, id);
CREATE INDEX webhook_deliveries_attempted_idx ON webhook_deliveries (attempted_at);
