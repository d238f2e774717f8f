DROP INDEX group_members_owners_idx;
DROP INDEX group_members_order_idx;
ALTER TABLE groups DROP COLUMN member_count;
DROP TABLE group_member_spans;
ALTER TABLE group_members DROP COLUMN from_position;
-- Events read by group since the upgrade are no longer anyone's.
DROP TABLE event_groups;
ALTER TABLE conversation_states ADD COLUMN unread_count BIGINT NOT NULL DEFAULT 0;
UPDATE conversation_states
SET unread_count = c.message_seq - conversation_states.read_seq - conversation_states.own_after
    - (SELECT COUNT(*) FROM message_gaps g
       WHERE g.conversation_id = conversation_states.conversation_id
         AND g.seq > conversation_states.read_seq
         AND g.sender_id <> conversation_states.contact_id)
FROM conversations c
WHERE c.id = conversation_states.conversation_id;
-- Every member has a state row again (the counter lives there).
INSERT INTO conversation_states (conversation_id, contact_id, unread_count)
SELECT c.id, m.contact_id,
       (SELECT COUNT(*) FROM messages x WHERE x.conversation_id = c.id AND x.sender_id <> m.contact_id)
FROM conversations c
JOIN group_members m ON m.group_id = c.group_id
ON CONFLICT DO NOTHING;
ALTER TABLE conversation_states DROP COLUMN read_seq;
ALTER TABLE conversation_states DROP COLUMN own_after;
DROP TABLE message_gaps;
ALTER TABLE messages DROP COLUMN seq;
ALTER TABLE conversations DROP COLUMN message_seq;
ALTER TABLE conversations DROP COLUMN deleted_count;
