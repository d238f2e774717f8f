DROP INDEX conversations_creator_order_idx;
DROP INDEX conversations_peer_order_idx;
DROP INDEX conversations_group_order_idx;
CREATE INDEX conversations_activity_idx ON conversations (activity_at DESC, id DESC);
CREATE INDEX conversations_group_id_idx ON conversations (group_id);
CREATE INDEX conversations_creator_id_idx ON conversations (creator_id);
CREATE INDEX conversations_peer_id_idx ON conversations (peer_id);
