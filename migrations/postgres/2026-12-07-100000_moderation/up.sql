-- Moderation (API.md section 18).
--
-- * Group admins: a third role.
-- * Blocks: one contact's block of another. Both go with either contact.
--   Read by the blocker's list (newest first) and, on every write between
--   two contacts, by its key in either direction.
-- * Reports to the operator: of a message (`message_id`, whose sender is
--   `contact_id`) or of a contact (`message_id` NULL). No foreign key on
--   what is reported: a report outlives the message deleted after it (its
--   text goes with the message). A reporter has at most one open report
--   of one target.
ALTER TABLE group_members DROP CONSTRAINT group_members_role_check;
ALTER TABLE group_members
    ADD CONSTRAINT group_members_role_check CHECK (role IN ('owner', 'admin', 'member'));

CREATE TABLE blocks (
    blocker_id UUID NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    blocked_id UUID NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (blocker_id, blocked_id),
    CHECK (blocker_id <> blocked_id)
);
CREATE INDEX blocks_list_idx ON blocks (blocker_id, created_at, blocked_id);
CREATE INDEX blocks_blocked_idx ON blocks (blocked_id, blocker_id);

CREATE TABLE reports (
    id          UUID PRIMARY KEY,
    reporter_id UUID NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    message_id  UUID,
    contact_id  UUID NOT NULL,
    reason      TEXT NOT NULL
        CHECK (reason IN ('spam', 'harassment', 'inappropriate', 'other')),
    description TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('open', 'resolved', 'dismissed')),
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE UNIQUE INDEX reports_open_target_idx
    ON reports (reporter_id, (COALESCE(message_id, contact_id))) WHERE status = 'open';
CREATE INDEX reports_status_idx ON reports (status, id);
-- A contact's own reports, oldest first (their export).
CREATE INDEX reports_reporter_idx ON reports (reporter_id, id);
