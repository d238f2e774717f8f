-- Conversation depth (API.md section 16): replies that quote a message,
-- threads one level deep, mentions, and the earlier texts of edits.
--
-- `reply_to_id` and `parent_id` have no foreign key on purpose: a reply
-- keeps the id of a deleted message it quoted (shown as
-- {"id","deleted":true}), and a thread reply keeps its thread when the
-- message that started it is deleted.
ALTER TABLE messages
    ADD COLUMN reply_to_id   UUID,
    ADD COLUMN parent_id     UUID,
    -- The thread's replies and its latest one's time, kept by each send and
    -- deletion of a reply: a page reads them with the row, never counts.
    ADD COLUMN reply_count   BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN last_reply_at BIGINT,
    -- When the text last changed (`updated_at` also moves for reactions
    -- and attachments).
    ADD COLUMN edited_at     BIGINT,
    -- The mentioned contacts, a JSON array of ids; NULL when none.
    ADD COLUMN mentions      TEXT;

-- A conversation's messages without thread replies (its default page), and
-- a thread's replies, each one index range in the order of the lists.
CREATE INDEX messages_top_level_order_idx
    ON messages (conversation_id, created_at DESC, id DESC) WHERE parent_id IS NULL;
CREATE INDEX messages_thread_order_idx
    ON messages (parent_id, created_at DESC, id DESC) WHERE parent_id IS NOT NULL;
-- The replies quoting a message: what its deletion scrubs the quote from.
CREATE INDEX messages_reply_to_idx ON messages (reply_to_id) WHERE reply_to_id IS NOT NULL;

-- A member's unread messages that mention them: kept by the sends, edits
-- and deletions that mention them (at most 50 rows each), reset by opening
-- the conversation; never counted at read time.
ALTER TABLE conversation_states ADD COLUMN mention_unread BIGINT NOT NULL DEFAULT 0;

-- The earlier texts of edited messages; they go with their message.
CREATE TABLE message_edits (
    id         UUID PRIMARY KEY,
    message_id UUID NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    body       TEXT NOT NULL,
    edited_at  BIGINT NOT NULL
);
CREATE INDEX message_edits_order_idx ON message_edits (message_id, edited_at DESC, id DESC);
