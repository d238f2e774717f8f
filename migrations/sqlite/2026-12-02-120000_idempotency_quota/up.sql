-- Idempotency keys are bounded per contact (API.md section 9: at most
-- CONFAB_IDEMPOTENCY_KEYS_PER_DAY new keys a day, all its tokens together).
-- One counter per contact and UTC day, raised together with the claim of a
-- new key (queries/idempotency.rs: PostgreSQL in the claim's one statement,
-- SQLite in its transaction), so that a claim never counts the contact's
-- keys; a claim past the quota stores nothing. Rows of past days go with
-- the expired keys (prune_keys), found by the primary key's leading `day`.
CREATE TABLE idempotency_quota (
    -- Whole days since the Unix epoch, UTC.
    day        BIGINT NOT NULL,
    contact_id TEXT NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    -- New keys the contact claimed that day.
    used       BIGINT NOT NULL,
    PRIMARY KEY (day, contact_id)
);
