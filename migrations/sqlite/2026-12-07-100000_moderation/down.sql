DROP TABLE reports;
DROP TABLE blocks;
CREATE TABLE group_members_old (
    group_id      TEXT NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
    contact_id    TEXT NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    role          TEXT NOT NULL CHECK (role IN ('owner', 'member')),
    seq           BIGINT NOT NULL,
    joined_at     BIGINT NOT NULL,
    from_position BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (group_id, contact_id)
);
INSERT INTO group_members_old (group_id, contact_id, role, seq, joined_at, from_position)
SELECT group_id, contact_id, CASE WHEN role = 'admin' THEN 'member' ELSE role END,
       seq, joined_at, from_position FROM group_members;
DROP TABLE group_members;
ALTER TABLE group_members_old RENAME TO group_members;
CREATE INDEX group_members_contact_id_idx ON group_members (contact_id, group_id);
CREATE INDEX group_members_order_idx ON group_members (group_id, seq, contact_id);
CREATE INDEX group_members_owners_idx ON group_members (group_id) WHERE role = 'owner';
