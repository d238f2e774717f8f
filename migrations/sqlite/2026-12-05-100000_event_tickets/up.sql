-- Event tickets (API.md section 19): a browser's EventSource cannot send a
-- header, so a client trades its token for a ticket good only for opening
-- GET /v1/events?ticket=... for 10 minutes. Like tokens, only the SHA-256 of
-- the secret is stored. A ticket lives no longer than the token that made
-- it: a revoked or expired token's tickets are refused (the lookup joins
-- the token), and they go with it.
CREATE TABLE event_tickets (
    ticket_hash   TEXT NOT NULL PRIMARY KEY,
    token_id      TEXT NOT NULL REFERENCES tokens (id) ON DELETE CASCADE,
    contact_id    TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    expires_at    BIGINT NOT NULL
);
-- The hourly pruning of expired tickets, and the tickets of a token or a
-- contact when it goes.
CREATE INDEX event_tickets_expires_idx ON event_tickets (expires_at);
CREATE INDEX event_tickets_token_idx ON event_tickets (token_id);
CREATE INDEX event_tickets_contact_idx ON event_tickets (contact_id);
