CREATE INDEX messages_order_idx ON messages (created_at DESC, id DESC);
DROP INDEX messages_group_order_idx;
DROP INDEX messages_direct_peer_order_idx;
DROP INDEX messages_direct_creator_order_idx;
ALTER TABLE messages
    DROP CONSTRAINT messages_audience_check,
    DROP COLUMN group_id,
    DROP COLUMN direct_peer_id,
    DROP COLUMN direct_creator_id;
