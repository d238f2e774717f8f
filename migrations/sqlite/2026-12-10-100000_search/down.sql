DROP TRIGGER messages_search_update;
DROP TRIGGER messages_search_delete;
DROP TRIGGER messages_search_insert;
DROP TABLE messages_search;
DROP INDEX messages_unfolded_idx;
ALTER TABLE messages DROP COLUMN body_folded;
