-- The audience of each message, copied from its conversation, so that the
-- all-conversations feed (GET /v1/messages without a conversation) is a few
-- ordered index ranges instead of a probe per conversation of the viewer:
-- the viewer's direct messages as creator (one range), as peer (one range),
-- and one range per group the viewer belongs to now. Group membership stays
-- live (a join on group_members at read time): only the group is copied,
-- never its members.
--
-- A conversation's creator_id, peer_id and group_id never change after it
-- is created (its only updates set last_active_at, activity_at and
-- pinned_message_id), so the copies, written by the message's insert from
-- the conversation row, stay right. A conversation's deletion deletes its
-- messages (ON DELETE CASCADE) and with them their copies.
ALTER TABLE messages
    -- The direct conversation's two members; NULL for a group's message.
    ADD COLUMN direct_creator_id UUID,
    ADD COLUMN direct_peer_id UUID,
    -- The group conversation's group; NULL for a direct message.
    ADD COLUMN group_id UUID;

UPDATE messages m
SET direct_creator_id = CASE WHEN c.group_id IS NULL THEN c.creator_id END,
    direct_peer_id = CASE WHEN c.group_id IS NULL THEN c.peer_id END,
    group_id = c.group_id
FROM conversations c
WHERE c.id = m.conversation_id;

-- Every message carries the audience of its kind, so that none can drop out
-- of every feed unseen (an insert that forgot the copies fails instead).
ALTER TABLE messages ADD CONSTRAINT messages_audience_check CHECK (
    (group_id IS NULL AND direct_creator_id IS NOT NULL AND direct_peer_id IS NOT NULL)
    OR (group_id IS NOT NULL AND direct_creator_id IS NULL AND direct_peer_id IS NULL));

CREATE INDEX messages_direct_creator_order_idx
    ON messages (direct_creator_id, created_at DESC, id DESC)
    WHERE direct_creator_id IS NOT NULL;
CREATE INDEX messages_direct_peer_order_idx
    ON messages (direct_peer_id, created_at DESC, id DESC)
    WHERE direct_peer_id IS NOT NULL;
CREATE INDEX messages_group_order_idx
    ON messages (group_id, created_at DESC, id DESC)
    WHERE group_id IS NOT NULL;

-- The global order of all messages served only the feed (and, in bad
-- plans, a conversation's page, which walked it through everyone's newer
-- messages). Nothing reads it now: one index write less per send.
DROP INDEX messages_order_idx;
