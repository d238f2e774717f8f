ALTER TABLE conversation_states DROP COLUMN unread_count;
