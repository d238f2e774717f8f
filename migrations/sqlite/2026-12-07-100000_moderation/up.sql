-- Moderation (API.md section 18); see the PostgreSQL migration. SQLite
-- cannot change a CHECK: `group_members` is rebuilt with the third role.
CREATE TABLE group_members_new (
    group_id      TEXT NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
    contact_id    TEXT NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    role          TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
    -- Join order within the group.
    seq           BIGINT NOT NULL,
    joined_at     BIGINT NOT NULL,
    from_position BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (group_id, contact_id)
);
INSERT INTO group_members_new (group_id, contact_id, role, seq, joined_at, from_position)
SELECT group_id, contact_id, role, seq, joined_at, from_position FROM group_members;
DROP TABLE group_members;
ALTER TABLE group_members_new RENAME TO group_members;
CREATE INDEX group_members_contact_id_idx ON group_members (contact_id, group_id);
CREATE INDEX group_members_order_idx ON group_members (group_id, seq, contact_id);
CREATE INDEX group_members_owners_idx ON group_members (group_id) WHERE role = 'owner';

CREATE TABLE blocks (
    blocker_id TEXT NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    blocked_id TEXT NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (blocker_id, blocked_id),
    CHECK (blocker_id <> blocked_id)
) WITHOUT ROWID;
CREATE INDEX blocks_list_idx ON blocks (blocker_id, created_at, blocked_id);
CREATE INDEX blocks_blocked_idx ON blocks (blocked_id, blocker_id);

CREATE TABLE reports (
    id          TEXT NOT NULL PRIMARY KEY,
    reporter_id TEXT NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    message_id  TEXT,
    contact_id  TEXT NOT NULL,
    reason      TEXT NOT NULL
        CHECK (reason IN ('spam', 'harassment', 'inappropriate', 'other')),
    description TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('open', 'resolved', 'dismissed')),
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE UNIQUE INDEX reports_open_target_idx
    ON reports (reporter_id, COALESCE(message_id, contact_id)) WHERE status = 'open';
CREATE INDEX reports_status_idx ON reports (status, id);
-- A contact's own reports, oldest first (their export).
CREATE INDEX reports_reporter_idx ON reports (reporter_id, id);
