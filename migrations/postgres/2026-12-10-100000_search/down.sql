DROP INDEX messages_body_trgm_idx;
DROP INDEX messages_unfolded_idx;
ALTER TABLE messages DROP COLUMN body_folded;
