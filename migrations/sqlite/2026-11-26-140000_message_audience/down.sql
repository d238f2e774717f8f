CREATE INDEX messages_order_idx ON messages (created_at DESC, id DESC);
DROP INDEX messages_group_order_idx;
DROP INDEX messages_direct_peer_order_idx;
DROP INDEX messages_direct_creator_order_idx;
DROP TRIGGER messages_audience_check;
ALTER TABLE messages DROP COLUMN group_id;
ALTER TABLE messages DROP COLUMN direct_peer_id;
ALTER TABLE messages DROP COLUMN direct_creator_id;
