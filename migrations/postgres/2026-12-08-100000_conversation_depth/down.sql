DROP TABLE message_edits;
ALTER TABLE conversation_states DROP COLUMN mention_unread;
DROP INDEX messages_reply_to_idx;
DROP INDEX messages_thread_order_idx;
DROP INDEX messages_top_level_order_idx;
ALTER TABLE messages
    DROP COLUMN mentions,
    DROP COLUMN edited_at,
    DROP COLUMN last_reply_at,
    DROP COLUMN reply_count,
    DROP COLUMN parent_id,
    DROP COLUMN reply_to_id;
