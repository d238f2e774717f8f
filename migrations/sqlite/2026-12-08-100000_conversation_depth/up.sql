-- Conversation depth (API.md section 16); see the PostgreSQL migration.
ALTER TABLE messages ADD COLUMN reply_to_id TEXT;
ALTER TABLE messages ADD COLUMN parent_id TEXT;
ALTER TABLE messages ADD COLUMN reply_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN last_reply_at BIGINT;
ALTER TABLE messages ADD COLUMN edited_at BIGINT;
ALTER TABLE messages ADD COLUMN mentions TEXT;

CREATE INDEX messages_top_level_order_idx
    ON messages (conversation_id, created_at DESC, id DESC) WHERE parent_id IS NULL;
CREATE INDEX messages_thread_order_idx
    ON messages (parent_id, created_at DESC, id DESC) WHERE parent_id IS NOT NULL;
CREATE INDEX messages_reply_to_idx ON messages (reply_to_id) WHERE reply_to_id IS NOT NULL;

ALTER TABLE conversation_states ADD COLUMN mention_unread BIGINT NOT NULL DEFAULT 0;

CREATE TABLE message_edits (
    id         TEXT NOT NULL PRIMARY KEY,
    message_id TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    body       TEXT NOT NULL,
    edited_at  BIGINT NOT NULL
);
CREATE INDEX message_edits_order_idx ON message_edits (message_id, edited_at DESC, id DESC);
