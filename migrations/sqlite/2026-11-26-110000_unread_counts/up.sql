-- Unread counts (API.md section 12): each member's number of messages from
-- others that arrived after the member last opened the conversation, kept
-- as a counter in the member's state row. A send adds one to every other
-- member's row, opening sets one's own to 0, deleting a message takes it
-- back from those who had not read it. So every member has a state row
-- from now on: group members get theirs when the conversation is made or
-- when they join, instead of on their first change.
ALTER TABLE conversation_states ADD COLUMN unread_count BIGINT NOT NULL DEFAULT 0;

INSERT INTO conversation_states (conversation_id, contact_id)
SELECT c.id, m.contact_id
FROM conversations c
JOIN group_members m ON m.group_id = c.group_id
ON CONFLICT DO NOTHING;

UPDATE conversation_states
SET unread_count = (
    SELECT COUNT(*) FROM messages
    WHERE messages.conversation_id = conversation_states.conversation_id
      AND messages.sender_id <> conversation_states.contact_id
      AND messages.created_at > COALESCE(conversation_states.last_opened_at, -1)
);
